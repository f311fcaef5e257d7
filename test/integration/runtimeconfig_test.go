package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1beta1apply "k8s.io/client-go/applyconfigurations/coordination/v1beta1"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// runtimeConfigStart starts the generic control plane with --runtime-config
// set to config, e.g. {"coordination.k8s.io/v1beta1": "true"}.
func runtimeConfigStart(t *testing.T, config map[string]string) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Options{
		Stack: layering.Generic(),
		APIServer: func(o *options.Options) {
			for k, v := range config {
				o.APIEnablement.RuntimeConfig[k] = v
			}
		},
	})
}

// runtimeConfigVersions returns the served versions of each group.
func runtimeConfigVersions(t *testing.T, s *testserver.Server) map[string][]string {
	t.Helper()
	groups, err := s.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out[g.Name] = append(out[g.Name], v.Version)
		}
		if g.Name == coordinationv1.GroupName && g.PreferredVersion.Version != "v1" {
			t.Errorf("coordination.k8s.io preferred version %q, want v1", g.PreferredVersion.Version)
		}
	}
	return out
}

// runtimeConfigStored returns the bytes etcd holds at key.
func runtimeConfigStored(t *testing.T, s *testserver.Server, key string) []byte {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.UnixSocketURL(filepath.Join(s.DataDir, "etcd.sock"))}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd key %s: want one key, got %d", key, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

// runtimeConfigCauses returns "field" of each cause of a 422, failing on
// any other error.
func runtimeConfigCauses(t *testing.T, err error) []string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var fields []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	sort.Strings(fields)
	return fields
}

// runtimeConfigTableColumns returns the column names kubectl would print.
func runtimeConfigTableColumns(t *testing.T, s *testserver.Server, path string) []string {
	t.Helper()
	tbl := &metav1.Table{}
	if err := s.Client.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Into(tbl); err != nil {
		t.Fatalf("table of %s: %v", path, err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if len(tbl.Rows) == 0 {
		t.Fatalf("table of %s has no rows", path)
	}
	return names
}

// TestRuntimeConfigDefaultsOff checks that, as upstream, neither
// coordination.k8s.io/v1beta1 nor internal.apiserver.k8s.io is served
// without --runtime-config.
func TestRuntimeConfigDefaultsOff(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	versions := runtimeConfigVersions(t, s)
	if got := versions[coordinationv1.GroupName]; !slices.Equal(got, []string{"v1"}) {
		t.Errorf("coordination.k8s.io versions %v, want [v1]", got)
	}
	if got, ok := versions[apiserverinternalv1alpha1.GroupName]; ok {
		t.Errorf("internal.apiserver.k8s.io is served by default: %v", got)
	}
	ctx := context.Background()
	if _, err := s.Client.CoordinationV1beta1().LeaseCandidates("default").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("leasecandidates: want 404, got %v", err)
	}
	if _, err := s.Client.InternalV1alpha1().StorageVersions().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("storageversions: want 404, got %v", err)
	}
}

// TestRuntimeConfigEnabled turns both versions on and exercises the
// resources: create, get, list, update, validation, table columns, and the
// version they are stored in.
func TestRuntimeConfigEnabled(t *testing.T) {
	t.Parallel()
	s := runtimeConfigStart(t, map[string]string{
		"coordination.k8s.io/v1beta1":        "true",
		"internal.apiserver.k8s.io/v1alpha1": "true",
	})
	versions := runtimeConfigVersions(t, s)
	if got := versions[coordinationv1.GroupName]; !slices.Equal(got, []string{"v1", "v1beta1"}) {
		t.Errorf("coordination.k8s.io versions %v, want [v1 v1beta1]", got)
	}
	if got := versions[apiserverinternalv1alpha1.GroupName]; !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("internal.apiserver.k8s.io versions %v, want [v1alpha1]", got)
	}
	resources, err := s.Client.Discovery().ServerResourcesForGroupVersion("internal.apiserver.k8s.io/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
		if r.Namespaced {
			t.Errorf("%s is namespaced", r.Name)
		}
	}
	if sort.Strings(names); !slices.Equal(names, []string{"storageversions", "storageversions/status"}) {
		t.Errorf("internal.apiserver.k8s.io/v1alpha1 resources %v", names)
	}

	t.Run("leasecandidates", func(t *testing.T) { runtimeConfigLeaseCandidates(t, s) })
	t.Run("storageversions", func(t *testing.T) { runtimeConfigStorageVersions(t, s) })
}

func runtimeConfigLeaseCandidates(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	candidates := s.Client.CoordinationV1beta1().LeaseCandidates("default")
	lc := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "controllers-node_a"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: "controllers", BinaryVersion: "1.37.1", EmulationVersion: "1.37.0", Strategy: coordinationv1.OldestEmulationVersion,
		},
	}
	created, err := candidates.Create(ctx, lc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := candidates.Get(ctx, lc.Name, metav1.GetOptions{})
	if err != nil || got.Spec.LeaseName != "controllers" || got.Spec.BinaryVersion != "1.37.1" || got.UID != created.UID {
		t.Fatalf("get: %v %+v", err, got)
	}
	list, err := candidates.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}

	// The candidate is stored as v1beta1, the only version of its kind;
	// a lease in the same group stays v1.
	if v := runtimeConfigStored(t, s, "/registry/leasecandidates/default/"+lc.Name); !bytes.Contains(v, []byte("coordination.k8s.io/v1beta1")) {
		t.Errorf("stored lease candidate is not v1beta1: %q", v[:min(len(v), 80)])
	}
	if _, err := s.Client.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "controllers"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := runtimeConfigStored(t, s, "/registry/leases/default/controllers"); !bytes.Contains(v, []byte("coordination.k8s.io/v1")) || bytes.Contains(v, []byte("v1beta1")) {
		t.Errorf("stored lease is not v1: %q", v[:min(len(v), 80)])
	}

	// Renewing updates ping and renew times.
	now := metav1.NowMicro()
	got.Spec.RenewTime, got.Spec.PingTime = &now, &now
	if _, err := candidates.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// As upstream, PUT creates a missing candidate.
	put := lc.DeepCopy()
	put.Name = "controllers-node_b"
	if _, err := candidates.Update(ctx, put, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PUT of a new candidate: %v", err)
	}

	// Server-side apply works with the v1beta1 schema.
	apply := coordinationv1beta1apply.LeaseCandidate("controllers-node_c", "default").WithSpec(
		coordinationv1beta1apply.LeaseCandidateSpec().WithLeaseName("controllers").WithBinaryVersion("1.37.0").
			WithEmulationVersion("1.36.0").WithStrategy(coordinationv1.OldestEmulationVersion))
	if _, err := candidates.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "test"}); err != nil {
		t.Fatalf("apply: %v", err)
	}

	if cols := runtimeConfigTableColumns(t, s, "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates"); !slices.Equal(cols, []string{"Name", "LeaseName", "BinaryVersion", "EmulationVersion", "Age"}) {
		t.Errorf("table columns %v", cols)
	}

	bad := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       coordinationv1beta1.LeaseCandidateSpec{BinaryVersion: "1.x", Strategy: "Newest"},
	}
	_, err = candidates.Create(ctx, bad, metav1.CreateOptions{})
	want := []string{"spec.binaryVersion", "spec.leaseName", "spec.strategy.strategy"}
	if causes := runtimeConfigCauses(t, err); !slices.Equal(causes, want) {
		t.Errorf("invalid candidate causes %v, want %v", causes, want)
	}

	got, err = candidates.Get(ctx, lc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.LeaseName = "other"
	_, err = candidates.Update(ctx, got, metav1.UpdateOptions{})
	if causes := runtimeConfigCauses(t, err); !slices.Equal(causes, []string{"spec.leaseName"}) {
		t.Errorf("lease name change causes %v, want [spec.leaseName]", causes)
	}
}

func runtimeConfigStorageVersions(t *testing.T, s *testserver.Server) {
	ctx := context.Background()
	svs := s.Client.InternalV1alpha1().StorageVersions()
	common := "coordination.k8s.io/v1"
	status := apiserverinternalv1alpha1.StorageVersionStatus{
		StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{{
			APIServerID: "apiserver-1", EncodingVersion: common, DecodableVersions: []string{common}, ServedVersions: []string{common},
		}},
		CommonEncodingVersion: &common,
		Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{{
			Type: apiserverinternalv1alpha1.AllEncodingVersionsEqual, Status: apiserverinternalv1alpha1.ConditionTrue,
			Reason: "CommonEncodingVersionSet", Message: "Common encoding version set",
		}},
	}

	// The status given on create is dropped: only /status sets it.
	sv, err := svs.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "coordination.k8s.io.leases"}, Status: status}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sv.Status.StorageVersions) != 0 || sv.Status.CommonEncodingVersion != nil {
		t.Errorf("status set on create: %+v", sv.Status)
	}
	sv.Status = status
	sv, err = svs.UpdateStatus(ctx, sv, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	got, err := svs.Get(ctx, sv.Name, metav1.GetOptions{})
	if err != nil || got.Status.CommonEncodingVersion == nil || *got.Status.CommonEncodingVersion != common || len(got.Status.StorageVersions) != 1 {
		t.Fatalf("get after status update: %v %+v", err, got)
	}
	list, err := svs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	if v := runtimeConfigStored(t, s, "/registry/storageversions/"+sv.Name); !bytes.Contains(v, []byte("internal.apiserver.k8s.io/v1alpha1")) {
		t.Errorf("stored storage version is not v1alpha1: %q", v[:min(len(v), 80)])
	}

	// An update of the main resource keeps the status; a status update
	// keeps the labels.
	got.Status = apiserverinternalv1alpha1.StorageVersionStatus{}
	got.Labels = map[string]string{"a": "b"}
	updated, err := svs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Status.CommonEncodingVersion == nil || updated.Labels["a"] != "b" {
		t.Errorf("update: status %+v labels %v", updated.Status, updated.Labels)
	}
	updated.Labels = nil
	updated, err = svs.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Labels["a"] != "b" {
		t.Errorf("status update changed labels: %v", updated.Labels)
	}

	if cols := runtimeConfigTableColumns(t, s, "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions"); !slices.Equal(cols, []string{"Name", "CommonEncodingVersion", "StorageVersions", "Age"}) {
		t.Errorf("table columns %v", cols)
	}

	_, err = svs.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "leases"}}, metav1.CreateOptions{})
	if causes := runtimeConfigCauses(t, err); !slices.Equal(causes, []string{"metadata.name"}) {
		t.Errorf("invalid name causes %v, want [metadata.name]", causes)
	}

	bad := updated.DeepCopy()
	bad.Status.StorageVersions = append(bad.Status.StorageVersions, apiserverinternalv1alpha1.ServerStorageVersion{
		APIServerID: "apiserver-1", EncodingVersion: "coordination.k8s.io/v1beta1", DecodableVersions: []string{"v1"},
	})
	_, err = svs.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	want := []string{"status.commonEncodingVersion", "status.storageVersions[1].apiServerID", "status.storageVersions[1].decodableVersions"}
	if causes := runtimeConfigCauses(t, err); !slices.Equal(causes, want) {
		t.Errorf("invalid status causes %v, want %v", causes, want)
	}
	if !strings.Contains(err.Error(), "decodableVersions must include encodingVersion") {
		t.Errorf("message: %v", err)
	}
}

// TestRuntimeConfigFlowControlOff: turning the flowcontrol API off needs
// API Priority and Fairness off too, as upstream insists; with both off
// the server starts, serves, and limits with max-in-flight instead.
func TestRuntimeConfigFlowControlOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := allinone.Start(ctx, allInOne(t.TempDir(),
		func(o *options.Options) { o.APIEnablement.RuntimeConfig["flowcontrol.apiserver.k8s.io/v1"] = "false" }), composeGeneric(t))
	if want := "API Priority and Fairness needs --runtime-config=flowcontrol.apiserver.k8s.io/v1=true"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("start with the flowcontrol API off: got %v, want %q", err, want)
	}

	s := testserver.Start(t, testserver.Options{
		Stack: layering.Generic(),
		APIServer: func(o *options.Options) {
			o.APIEnablement.RuntimeConfig["flowcontrol.apiserver.k8s.io/v1"] = "false"
			o.Features.EnablePriorityAndFairness = false
		},
	})
	if _, ok := runtimeConfigVersions(t, s)["flowcontrol.apiserver.k8s.io"]; ok {
		t.Fatal("flowcontrol.apiserver.k8s.io served with --runtime-config=flowcontrol.apiserver.k8s.io/v1=false")
	}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeConfigReadByServerOff: a group the server reads (the RBAC
// authorizer's policy) cannot be turned off, whole or one resource: the
// start fails at once, naming it, instead of an authorizer that lists for
// ever and a server that never gets ready.
func TestRuntimeConfigReadByServerOff(t *testing.T) {
	t.Parallel()
	for key, off := range map[string]string{
		"rbac.authorization.k8s.io/v1":       "rbac.authorization.k8s.io/v1,",
		"rbac.authorization.k8s.io/v1/roles": "rbac.authorization.k8s.io/v1/roles,",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		dataDir := filepath.Join(t.TempDir(), "data")
		_, err := allinone.Start(ctx, allInOne(dataDir, func(o *options.Options) { o.APIEnablement.RuntimeConfig[key] = "false" }), composeGeneric(t))
		want := "--runtime-config turns off " + strings.TrimSuffix(off, ",") + ", which the RBAC authorizer reads"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("start with %s=false: got %v, want %q", key, err, want)
		}
		if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
			t.Errorf("start with %s=false left its data dir: %v", key, err)
		}
	}
}

// TestRuntimeConfigLeasesOff: with coordination.k8s.io turned off the
// server runs without the identity Leases that need it (its post-start
// hooks are not there), rather than failing to write them for ever.
func TestRuntimeConfigLeasesOff(t *testing.T) {
	t.Parallel()
	s := runtimeConfigStart(t, map[string]string{"coordination.k8s.io/v1": "false"})
	if _, ok := runtimeConfigVersions(t, s)[coordinationv1.GroupName]; ok {
		t.Fatal("coordination.k8s.io served with --runtime-config=coordination.k8s.io/v1=false")
	}
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("/readyz: %v\n%s", err, body)
	}
	if strings.Contains(string(body), "identity-lease") {
		t.Errorf("the identity Lease hooks run without the Lease API:\n%s", body)
	}
}
