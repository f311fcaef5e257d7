package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/ensurer"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

const flowcontrolPath = "/apis/flowcontrol.apiserver.k8s.io/v1"

// flowcontrolEventually polls cond for up to timeout.
func flowcontrolEventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("timed out waiting for %s: %v", what, err)
	}
}

// flowcontrolDo sends a GET with client to cfg's server and returns the
// response with its body read; it is safe to call from any goroutine.
func flowcontrolDo(client *http.Client, cfg *rest.Config, path string, header http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// flowcontrolGet is flowcontrolDo failing the test on a transport error.
func flowcontrolGet(t *testing.T, client *http.Client, cfg *rest.Config, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	resp, body, err := flowcontrolDo(client, cfg, path, header)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp, body
}

func flowcontrolHTTPClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// flowcontrolInvalid asserts err is a 422 naming every field in fields.
func flowcontrolInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("no details in %v", err)
	}
	var got []string
	for _, c := range status.Status().Details.Causes {
		got = append(got, c.Field)
	}
	for _, f := range fields {
		if !slices.Contains(got, f) {
			t.Errorf("want a cause for %s, got %q (%v)", f, got, err)
		}
	}
}

func flowcontrolLimitedLevel(name string, shares int32) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To(shares),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
}

func flowcontrolUserSchema(name, level, user string, precedence int32) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
				}},
			}},
		},
	}
}

// TestFlowControl checks the served flowcontrol API and API Priority and
// Fairness on one server: the bootstrap configuration, defaults,
// validation, tables, the status subresource, the response headers and a
// 429 for a saturated priority level while system:masters and probes go on.
func TestFlowControl(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	fc := s.Client.FlowcontrolV1()

	t.Run("bootstrap configuration", func(t *testing.T) {
		var wantFS, wantPL []string
		for _, fs := range append(slices.Clone(bootstrap.MandatoryFlowSchemas), ensurer.SuggestedFlowSchemas()...) {
			wantFS = append(wantFS, fs.Name)
		}
		for _, pl := range append(slices.Clone(bootstrap.MandatoryPriorityLevelConfigurations), bootstrap.SuggestedPriorityLevelConfigurations...) {
			wantPL = append(wantPL, pl.Name)
		}
		slices.Sort(wantFS)
		slices.Sort(wantPL)
		// The hook ran before /readyz turned ready: no waiting.
		fsList, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var gotFS []string
		for _, fs := range fsList.Items {
			gotFS = append(gotFS, fs.Name)
			if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
				t.Errorf("flow schema %s: annotations %v", fs.Name, fs.Annotations)
			}
		}
		plList, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var gotPL []string
		for _, pl := range plList.Items {
			gotPL = append(gotPL, pl.Name)
		}
		if !slices.Equal(gotFS, wantFS) {
			t.Errorf("flow schemas: got %q, want %q", gotFS, wantFS)
		}
		if !slices.Equal(gotPL, wantPL) {
			t.Errorf("priority levels: got %q, want %q", gotPL, wantPL)
		}

		_, body := flowcontrolGet(t, flowcontrolHTTPClient(t, s.AdminConfig), s.AdminConfig, "/readyz?verbose", nil)
		for _, check := range []string{
			"[+]poststarthook/" + ensurer.HookName + " ok",
			"[+]poststarthook/priority-and-fairness-config-consumer ok",
			"[+]poststarthook/priority-and-fairness-filter ok",
		} {
			if !strings.Contains(string(body), check) {
				t.Errorf("/readyz?verbose lacks %q:\n%s", check, body)
			}
		}
	})

	t.Run("response headers and exemptions", func(t *testing.T) {
		exemptFS, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		exemptPL, err := fc.PriorityLevelConfigurations().Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameExempt, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		probes, err := fc.FlowSchemas().Get(ctx, "probes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		admin := flowcontrolHTTPClient(t, s.AdminConfig)
		anonymous := httpsClient(t, s, nil)
		// The filter classifies with what its informers have seen: poll.
		flowcontrolEventually(t, 30*time.Second, "system:masters classified as exempt", func(context.Context) (bool, error) {
			resp, _ := flowcontrolGet(t, admin, s.AdminConfig, "/api/v1/namespaces", nil)
			return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == string(exemptFS.UID) &&
				resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == string(exemptPL.UID), nil
		})
		for _, path := range []string{"/readyz", "/livez", "/healthz"} {
			flowcontrolEventually(t, 30*time.Second, "anonymous "+path+" classified as probes/exempt", func(context.Context) (bool, error) {
				resp, _ := flowcontrolGet(t, anonymous, s.AdminConfig, path, nil)
				return resp.StatusCode == http.StatusOK &&
					resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == string(probes.UID) &&
					resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == string(exemptPL.UID), nil
			})
		}
		resp, _ := flowcontrolGet(t, flowcontrolHTTPClient(t, userConfig(t, s, "someone")), s.AdminConfig, "/api/v1/namespaces/default/configmaps", nil)
		if resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == "" || resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == "" {
			t.Errorf("an ordinary user's request has no APF headers: %v", resp.Header)
		}
		// gcp's controller manager is not queued with ordinary users.
		controllersFS, err := fc.FlowSchemas().Get(ctx, ensurer.GCPControllersFlowSchema, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		controllers := flowcontrolHTTPClient(t, userConfig(t, s, bootstrappolicy.ControllersUser))
		flowcontrolEventually(t, 30*time.Second, "the controller manager classified as gcp-controllers", func(context.Context) (bool, error) {
			resp, _ := flowcontrolGet(t, controllers, s.AdminConfig, "/api/v1/namespaces/default/configmaps", nil)
			return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == string(controllersFS.UID), nil
		})
	})

	t.Run("defaults", func(t *testing.T) {
		pl := flowcontrolLimitedLevel("defaults-level", 0)
		pl.Spec.Limited.NominalConcurrencyShares = nil
		pl.Spec.Limited.LendablePercent = nil
		pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}
		got, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := got.Spec.Limited
		if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
			t.Errorf("defaults: %+v queuing %+v", l, l.LimitResponse.Queuing)
		}
		zero, err := fc.PriorityLevelConfigurations().Create(ctx, flowcontrolLimitedLevel("zero-level", 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *zero.Spec.Limited.NominalConcurrencyShares != 0 {
			t.Errorf("explicit 0 shares became %d", *zero.Spec.Limited.NominalConcurrencyShares)
		}
		fs, err := fc.FlowSchemas().Create(ctx, flowcontrolUserSchema("defaults-schema", "defaults-level", "nobody", 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fs.Spec.MatchingPrecedence != 1000 {
			t.Errorf("matchingPrecedence defaulted to %d", fs.Spec.MatchingPrecedence)
		}
	})

	t.Run("validation", func(t *testing.T) {
		_, err := fc.FlowSchemas().Create(ctx, flowcontrolUserSchema("too-late", "global-default", "u", 10001), metav1.CreateOptions{})
		flowcontrolInvalid(t, err, "spec.matchingPrecedence")
		_, err = fc.FlowSchemas().Create(ctx, flowcontrolUserSchema("negative", "global-default", "u", -3), metav1.CreateOptions{})
		flowcontrolInvalid(t, err, "spec.matchingPrecedence")
		bad := flowcontrolUserSchema("bad-rules", "", "u", 500)
		bad.Spec.Rules[0].Subjects[0].Kind = "Robot"
		bad.Spec.Rules[0].ResourceRules[0].Verbs = []string{"explode"}
		_, err = fc.FlowSchemas().Create(ctx, bad, metav1.CreateOptions{})
		flowcontrolInvalid(t, err, "spec.priorityLevelConfiguration.name", "spec.rules[0].subjects[0].kind", "spec.rules[0].resourceRules[0].verbs")

		pl := flowcontrolLimitedLevel("bad-type", 1)
		pl.Spec.Type = "Unlimited"
		_, err = fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		flowcontrolInvalid(t, err, "spec.type")
		pl = flowcontrolLimitedLevel("bad-queuing", 1)
		pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: -1}}
		_, err = fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		flowcontrolInvalid(t, err, "spec.limited.limitResponse.queuing.handSize", "spec.limited.limitResponse.queuing.queueLengthLimit")

		// The mandatory objects keep their fixed spec.
		catchAll, err := fc.PriorityLevelConfigurations().Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		catchAll.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](100)
		_, err = fc.PriorityLevelConfigurations().Update(ctx, catchAll, metav1.UpdateOptions{})
		flowcontrolInvalid(t, err, "spec")
		exempt, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		exempt.Spec.MatchingPrecedence = 2
		_, err = fc.FlowSchemas().Update(ctx, exempt, metav1.UpdateOptions{})
		flowcontrolInvalid(t, err, "spec")
		// ... except the exempt level's spec.exempt.
		exemptPL, err := fc.PriorityLevelConfigurations().Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameExempt, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		exemptPL.Spec.Exempt.LendablePercent = ptr.To[int32](10)
		if _, err := fc.PriorityLevelConfigurations().Update(ctx, exemptPL, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("tuning the exempt level: %v", err)
		}
	})

	t.Run("status subresource and generation", func(t *testing.T) {
		pl := flowcontrolLimitedLevel("status-level", 2)
		pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Set", Status: flowcontrolv1.ConditionTrue}}
		created, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(created.Status.Conditions) != 0 || created.Generation != 1 {
			t.Fatalf("create kept status or generation: %+v gen %d", created.Status, created.Generation)
		}
		created.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "ViaStatus", Status: flowcontrolv1.ConditionTrue}}
		created.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](9)
		viaStatus, err := fc.PriorityLevelConfigurations().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(viaStatus.Status.Conditions) != 1 || *viaStatus.Spec.Limited.NominalConcurrencyShares != 2 || viaStatus.Generation != 1 {
			t.Errorf("status update: %+v spec %+v gen %d", viaStatus.Status, viaStatus.Spec.Limited, viaStatus.Generation)
		}
		viaStatus.Status.Conditions = nil
		viaStatus.Labels = map[string]string{"a": "b"}
		labelled, err := fc.PriorityLevelConfigurations().Update(ctx, viaStatus, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(labelled.Status.Conditions) != 1 || labelled.Generation != 1 {
			t.Errorf("main update changed status or generation: %+v gen %d", labelled.Status, labelled.Generation)
		}
		labelled.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](3)
		changed, err := fc.PriorityLevelConfigurations().Update(ctx, labelled, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if changed.Generation != 2 {
			t.Errorf("spec change: generation %d, want 2", changed.Generation)
		}
		bad := changed.DeepCopy()
		bad.Status.Conditions = append(bad.Status.Conditions, bad.Status.Conditions[0])
		_, err = fc.PriorityLevelConfigurations().UpdateStatus(ctx, bad, metav1.UpdateOptions{})
		flowcontrolInvalid(t, err, "status.conditions[1].type")

		// The APF configuration consumer writes FlowSchema status: a schema
		// naming a missing level is marked dangling.
		fs, err := fc.FlowSchemas().Create(ctx, flowcontrolUserSchema("dangling-schema", "no-such-level", "nobody", 600), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		flowcontrolEventually(t, 30*time.Second, "Dangling condition", func(ctx context.Context) (bool, error) {
			got, err := fc.FlowSchemas().Get(ctx, fs.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	})

	t.Run("tables", func(t *testing.T) {
		admin := flowcontrolHTTPClient(t, s.AdminConfig)
		accept := http.Header{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}
		for _, tc := range []struct {
			resource string
			columns  []string
			first    string
		}{
			{"flowschemas", []string{"Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"}, "exempt"},
			{"prioritylevelconfigurations", []string{"Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"}, ""},
		} {
			resp, body := flowcontrolGet(t, admin, s.AdminConfig, flowcontrolPath+"/"+tc.resource, accept)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", tc.resource, resp.StatusCode, body)
			}
			var table metav1.Table
			if err := json.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if !slices.Equal(columns, tc.columns) {
				t.Errorf("%s columns: got %q, want %q", tc.resource, columns, tc.columns)
			}
			if len(table.Rows) == 0 {
				t.Fatalf("%s: no rows", tc.resource)
			}
			if tc.first != "" && table.Rows[0].Cells[0] != tc.first {
				t.Errorf("%s: first row %v, want %s (matching order)", tc.resource, table.Rows[0].Cells, tc.first)
			}
		}
		resp, body := flowcontrolGet(t, admin, s.AdminConfig, flowcontrolPath+"/prioritylevelconfigurations/"+flowcontrolv1.PriorityLevelConfigurationNameExempt, accept)
		var table metav1.Table
		if err := json.Unmarshal(body, &table); err != nil || resp.StatusCode != http.StatusOK || len(table.Rows) != 1 {
			t.Fatalf("exempt table: %d %s %v", resp.StatusCode, body, err)
		}
		if got := fmt.Sprint(table.Rows[0].Cells[:6]); got != "[exempt Exempt <none> <none> <none> <none>]" {
			t.Errorf("exempt row: %s", got)
		}
	})

	t.Run("429 for a saturated priority level", func(t *testing.T) {
		flowcontrolFlood(t, s)
	})
}

// flowcontrolFlood routes the user "flooder" to a priority level with
// about three seats that rejects instead of queuing, holds requests in
// those seats by sending request bodies that never finish, and checks that
// the flooder gets 429 with Retry-After while system:masters and probes
// are served. Holding the seats makes the outcome independent of timing.
func flowcontrolFlood(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	fc := s.Client.FlowcontrolV1()
	const ns = "apf-flood"
	createNamespace(t, s.Client, ns)
	createRoleBinding(t, s.Client, ns, "flooder-edit", "ClusterRole", "edit", userSubject("flooder"))
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, flowcontrolLimitedLevel("flood-level", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	schema, err := fc.FlowSchemas().Create(ctx, flowcontrolUserSchema("flood-schema", "flood-level", "flooder", 50), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cfg := userConfig(t, s, "flooder")
	flooder := flowcontrolHTTPClient(t, cfg)
	listPath := "/api/v1/namespaces/" + ns + "/configmaps"
	flowcontrolEventually(t, 30*time.Second, "the flooder classified into flood-schema", func(context.Context) (bool, error) {
		resp, _ := flowcontrolGet(t, flooder, cfg, listPath, nil)
		return resp.StatusCode == http.StatusOK && resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == string(schema.UID), nil
	})

	// Hold the level's seats: each POST is admitted (or rejected) on its
	// headers, then waits for a body that only ends when we release it.
	const held = 20
	holdCtx, release := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	heldStatuses := map[int]int{}
	var writers []*io.PipeWriter
	for i := 0; i < held; i++ {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, err := http.NewRequestWithContext(holdCtx, http.MethodPost, strings.TrimSuffix(cfg.Host, "/")+listPath, pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`))
		}()
		go func() {
			defer wg.Done()
			resp, err := flooder.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			heldStatuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	defer func() {
		release()
		for _, pw := range writers {
			pw.CloseWithError(errors.New("released"))
		}
		wg.Wait()
	}()

	// With at most three seats and twenty requests holding or asking for
	// one, a burst of ordinary requests from the flooder meets a full level.
	var rejected, retryAfter int
	flowcontrolEventually(t, 60*time.Second, "a 429 for the flooder", func(context.Context) (bool, error) {
		var burst sync.WaitGroup
		var burstMu sync.Mutex
		for i := 0; i < 50; i++ {
			burst.Add(1)
			go func() {
				defer burst.Done()
				resp, _, err := flowcontrolDo(flooder, cfg, listPath, nil)
				if err == nil && resp.StatusCode == http.StatusTooManyRequests {
					burstMu.Lock()
					rejected++
					if resp.Header.Get("Retry-After") != "" {
						retryAfter++
					}
					burstMu.Unlock()
				}
			}()
		}
		burst.Wait()
		return rejected > 0, nil
	})
	if retryAfter != rejected {
		t.Errorf("%d of %d rejections carried Retry-After", retryAfter, rejected)
	}

	// Meanwhile system:masters and probes are not throttled.
	if _, err := s.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("admin list during the flood: %v", err)
	}
	if resp, body := flowcontrolGet(t, flowcontrolHTTPClient(t, s.AdminConfig), s.AdminConfig, "/readyz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz during the flood: %d %s", resp.StatusCode, body)
	}
	if resp, body := flowcontrolGet(t, httpsClient(t, s, nil), s.AdminConfig, "/readyz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous /readyz during the flood: %d %s", resp.StatusCode, body)
	}
	other := userClient(t, s, "bystander", "system:authenticated")
	if _, err := other.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil && !apierrors.IsForbidden(err) {
		t.Errorf("another user during the flood: %v", err)
	}
	mu.Lock()
	t.Logf("held requests answered so far: %v; burst rejections: %d", heldStatuses, rejected)
	mu.Unlock()
}

// TestFlowControlReensure checks that the bootstrap configuration is kept
// after start, as upstream's producer re-ensures it periodically (every
// minute; one second here): deleted mandatory objects come back, an
// auto-updated suggested one is restored, one marked autoupdate-spec
// "false" is left alone.
func TestFlowControlReensure(t *testing.T) {
	t.Parallel()
	stack := layering.Generic()
	found := false
	for i := range stack {
		if stack[i].Name == layering.FlowControl {
			if stack[i].PostStartHooks[ensurer.HookName] == nil {
				t.Fatalf("the %s layer has no %s hook", layering.FlowControl, ensurer.HookName)
			}
			stack[i].PostStartHooks = map[string]genericapiserver.PostStartHookFunc{ensurer.HookName: ensurer.NewHook(time.Second)}
			found = true
		}
	}
	if !found {
		t.Fatalf("no %s layer", layering.FlowControl)
	}
	s := testserver.Start(t, testserver.Options{Stack: stack})
	ctx := context.Background()
	fc := s.Client.FlowcontrolV1()

	catchAll, err := fc.PriorityLevelConfigurations().Get(ctx, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.PriorityLevelConfigurations().Delete(ctx, catchAll.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fc.FlowSchemas().Delete(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := func(name, annotation string, shares int32) {
		t.Helper()
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"spec":{"limited":{"nominalConcurrencyShares":%d}}}`, flowcontrolv1.AutoUpdateAnnotationKey, annotation, shares)
		if _, err := fc.PriorityLevelConfigurations().Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch("workload-low", "true", 1)
	patch("global-default", "false", 2)

	flowcontrolEventually(t, 30*time.Second, "the bootstrap configuration restored", func(ctx context.Context) (bool, error) {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, catchAll.Name, metav1.GetOptions{})
		if err != nil || pl.UID == catchAll.UID {
			return false, nil
		}
		if _, err := fc.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameExempt, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		low, err := fc.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
		return err == nil && *low.Spec.Limited.NominalConcurrencyShares == 100, nil
	})
	kept, err := fc.PriorityLevelConfigurations().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *kept.Spec.Limited.NominalConcurrencyShares != 2 {
		t.Errorf("a level marked autoupdate-spec=false was changed: %+v", kept.Spec.Limited)
	}
}
