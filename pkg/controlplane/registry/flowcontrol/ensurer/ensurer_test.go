package ensurer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/defaults"
)

// ensureOnce runs one Ensure pass over a fake cluster holding objects.
func ensureOnce(t *testing.T, objects ...runtime.Object) kubernetes.Interface {
	t.Helper()
	client := fake.NewSimpleClientset(objects...)
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(client, 0)
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	fs := factory.Flowcontrol().V1().FlowSchemas()
	pl := factory.Flowcontrol().V1().PriorityLevelConfigurations()
	fs.Informer()
	pl.Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := Ensure(ctx, client.FlowcontrolV1(), fs.Lister(), pl.Lister()); err != nil {
		t.Fatal(err)
	}
	return client
}

func getPL(t *testing.T, c kubernetes.Interface, name string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	pl, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func getFS(t *testing.T, c kubernetes.Interface, name string) *flowcontrolv1.FlowSchema {
	t.Helper()
	fs, err := c.FlowcontrolV1().FlowSchemas().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestEnsureCreatesEverything(t *testing.T) {
	c := ensureOnce(t)
	for _, list := range [][]*flowcontrolv1.FlowSchema{bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas} {
		for _, want := range list {
			got := getFS(t, c, want.Name)
			if !apiequality.Semantic.DeepEqual(got.Spec, want.Spec) || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
				t.Errorf("flow schema %s: got %+v", want.Name, got)
			}
		}
	}
	for _, list := range [][]*flowcontrolv1.PriorityLevelConfiguration{bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations} {
		for _, want := range list {
			got := getPL(t, c, want.Name)
			if !apiequality.Semantic.DeepEqual(got.Spec, want.Spec) {
				t.Errorf("priority level %s: got %+v", want.Name, got)
			}
		}
	}
}

// suggested returns a defaulted copy of the suggested priority level name.
func suggested(t *testing.T, name string) *flowcontrolv1.PriorityLevelConfiguration {
	t.Helper()
	for _, pl := range bootstrap.SuggestedPriorityLevelConfigurations {
		if pl.Name == name {
			out := pl.DeepCopy()
			defaults.PriorityLevelConfiguration(out)
			return out
		}
	}
	t.Fatalf("no suggested priority level %q", name)
	return nil
}

func TestEnsureRevises(t *testing.T) {
	// Mandatory: a changed catch-all is restored, even marked "false".
	catchAll := bootstrap.MandatoryPriorityLevelConfigurationCatchAll.DeepCopy()
	catchAll.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "false"}
	catchAll.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](99)
	// Mandatory exempt: administrators' tuning of spec.exempt is kept.
	exempt := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
	exempt.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](7)
	// Suggested, marked "true": restored.
	auto := suggested(t, "workload-low")
	auto.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](1)
	// Suggested, marked "false": kept.
	kept := suggested(t, "global-default")
	kept.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	kept.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](2)
	// Suggested, no annotation, edited (generation 2): kept, marked "false".
	edited := suggested(t, "leader-election")
	edited.Annotations = nil
	edited.Generation = 2
	edited.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](3)
	// Suggested, no annotation, never edited (generation 1): updated, marked "true".
	fresh := suggested(t, "node-high")
	fresh.Annotations = nil
	fresh.Generation = 1
	fresh.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](4)
	// Dangling: auto-updated objects not in the bootstrap set go; others stay.
	dangling := suggested(t, "workload-high")
	dangling.Name = "retired-level"
	usersFalse := dangling.DeepCopy()
	usersFalse.Name = "users-false"
	usersFalse.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	users := dangling.DeepCopy()
	users.Name = "users-level"
	users.Annotations = nil

	c := ensureOnce(t, catchAll, exempt, auto, kept, edited, fresh, dangling, usersFalse, users)

	if got := getPL(t, c, catchAll.Name); *got.Spec.Limited.NominalConcurrencyShares != 5 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("catch-all not restored: %+v", got)
	}
	if got := getPL(t, c, exempt.Name); *got.Spec.Exempt.NominalConcurrencyShares != 7 {
		t.Errorf("exempt tuning lost: %+v", got.Spec.Exempt)
	}
	if got := getPL(t, c, auto.Name); *got.Spec.Limited.NominalConcurrencyShares != 100 {
		t.Errorf("auto-updated suggested level not restored: %+v", got.Spec.Limited)
	}
	if got := getPL(t, c, kept.Name); *got.Spec.Limited.NominalConcurrencyShares != 2 {
		t.Errorf("level marked false was changed: %+v", got.Spec.Limited)
	}
	if got := getPL(t, c, edited.Name); *got.Spec.Limited.NominalConcurrencyShares != 3 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "false" {
		t.Errorf("edited level: %+v", got)
	}
	if got := getPL(t, c, fresh.Name); *got.Spec.Limited.NominalConcurrencyShares != 40 || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("unedited level: %+v", got)
	}
	if _, err := c.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), dangling.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dangling auto-updated level not removed: %v", err)
	}
	getPL(t, c, usersFalse.Name)
	getPL(t, c, users.Name)
}

func TestEnsureRestoresMandatoryFlowSchema(t *testing.T) {
	exempt := bootstrap.MandatoryFlowSchemaExempt.DeepCopy()
	exempt.Spec.Rules = nil
	c := ensureOnce(t, exempt)
	if got := getFS(t, c, exempt.Name); !apiequality.Semantic.DeepEqual(got.Spec, bootstrap.MandatoryFlowSchemaExempt.Spec) {
		t.Errorf("exempt flow schema not restored: %+v", got.Spec)
	}
}

func TestRunReensuresPeriodically(t *testing.T) {
	client := fake.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := run(ctx, client, 50*time.Millisecond, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	getPL(t, client, flowcontrolv1.PriorityLevelConfigurationNameCatchAll)
	if err := client.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("catch-all not recreated: %v", err)
	}
}

func TestRunGivesUp(t *testing.T) {
	client := fake.NewSimpleClientset()
	client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("not yet")
	})
	err := run(context.Background(), client, time.Minute, 2*time.Second)
	if err == nil {
		t.Fatal("run succeeded although every create failed")
	}
}

// TestEnsureAllWritesAtOnce: the objects of one step are written
// concurrently, not one create after another (a start waits for the
// first pass). Each create waits, a second at most, for another to be in
// flight with it.
func TestEnsureAllWritesAtOnce(t *testing.T) {
	var inFlight atomic.Int32
	together := make(chan struct{})
	var once sync.Once
	k := kind[*flowcontrolv1.PriorityLevelConfiguration]{
		get: func(name string) (*flowcontrolv1.PriorityLevelConfiguration, error) {
			return nil, apierrors.NewNotFound(flowcontrolv1.Resource("prioritylevelconfigurations"), name)
		},
		create: func(ctx context.Context, obj *flowcontrolv1.PriorityLevelConfiguration, _ metav1.CreateOptions) (*flowcontrolv1.PriorityLevelConfiguration, error) {
			defer inFlight.Add(-1)
			if inFlight.Add(1) >= 2 {
				once.Do(func() { close(together) })
			}
			select {
			case <-together:
			case <-time.After(time.Second):
			}
			return obj, nil
		},
	}
	if err := ensureAll(context.Background(), k, bootstrap.SuggestedPriorityLevelConfigurations, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-together:
	default:
		t.Errorf("the %d suggested priority levels were created one at a time", len(bootstrap.SuggestedPriorityLevelConfigurations))
	}
}
