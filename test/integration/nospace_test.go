package integration

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestNoSpaceIs507Everywhere: under etcd's NOSPACE alarm, a write is
// refused with 507 whichever server of the chain stores it: the native
// APIs, apiextensions' CRDs (and custom resources) and the aggregator's
// APIServices, not a 500 "not a metav1.Status" from the latter two.
func TestNoSpaceIs507Everywhere(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	s := testserver.Start(t, testserver.Options{DataDir: dataDir})
	ctx := context.Background()

	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(allinone.EtcdSocket(dataDir))}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	status, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	alarm := &pb.AlarmRequest{MemberID: status.Header.MemberId, Alarm: pb.AlarmType_NOSPACE}
	alarm.Action = pb.AlarmRequest_ACTIVATE
	if _, err := pb.NewMaintenanceClient(c.ActiveConnection()).Alarm(ctx, alarm); err != nil {
		t.Fatal(err)
	}
	defer func() {
		alarm.Action = pb.AlarmRequest_DEACTIVATE
		if _, err := pb.NewMaintenanceClient(c.ActiveConnection()).Alarm(ctx, alarm); err != nil {
			t.Error(err)
		}
	}()

	want507 := func(what string, err error) {
		t.Helper()
		if code := statusCode(err); code != 507 {
			t.Errorf("%s under NOSPACE: %d %v, want 507", what, code, err)
		}
	}
	_, err = s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	want507("create a ConfigMap", err)
	_, err = apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.full.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "full.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}, metav1.CreateOptions{})
	want507("create a CustomResourceDefinition", err)
	_, err = aggregatorclient.NewForConfigOrDie(s.AdminConfig).ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.full.example.com"},
		Spec:       apiregistrationv1.APIServiceSpec{Group: "full.example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15},
	}, metav1.CreateOptions{})
	want507("create an APIService", err)
}
