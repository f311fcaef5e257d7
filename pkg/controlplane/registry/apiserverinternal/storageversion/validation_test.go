package storageversion

import (
	"strings"
	"testing"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/test/fielderrors"
)

func ptr(s string) *string { return &s }

func serverVersion(id, enc string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: enc, DecodableVersions: []string{enc, "v1beta1"}, ServedVersions: []string{enc}}
}

func validStorageVersion() *apiserverinternalv1alpha1.StorageVersion {
	return &apiserverinternalv1alpha1.StorageVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "coordination.k8s.io.leases"},
		Status: apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions:       []apiserverinternalv1alpha1.ServerStorageVersion{serverVersion("a", "coordination.k8s.io/v1"), serverVersion("b", "coordination.k8s.io/v1")},
			CommonEncodingVersion: ptr("coordination.k8s.io/v1"),
			Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{{
				Type: apiserverinternalv1alpha1.AllEncodingVersionsEqual, Status: apiserverinternalv1alpha1.ConditionTrue, Reason: "CommonEncodingVersionSet", Message: "all equal",
			}},
		},
	}
}

func TestValidateName(t *testing.T) {
	cases := map[string]string{
		"core.configmaps":            "",
		"coordination.k8s.io.leases": "",
		"leases":                     "name must be in the form of <group>.<resource>",
		"Core.leases":                "the group segment ",
		"core.Leases":                "the resource segment ",
		"core.1leases":               "the resource segment ",
		".leases":                    "the group segment ",
	}
	for name, want := range cases {
		msgs := ValidateName(name, false)
		if want == "" && len(msgs) != 0 || want != "" && (len(msgs) == 0 || !strings.HasPrefix(msgs[0], want)) {
			t.Errorf("%q: %q, want a message starting %q", name, msgs, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*apiserverinternalv1alpha1.StorageVersion)
		want   string
	}{
		{"valid", func(*apiserverinternalv1alpha1.StorageVersion) {}, ""},
		{"empty status", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status = apiserverinternalv1alpha1.StorageVersionStatus{}
		}, ""},
		{"namespaced", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Namespace = "default" }, "FieldValueForbidden metadata.namespace"},
		{"bad name", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Name = "leases" }, "FieldValueInvalid metadata.name"},
		{"duplicate server", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Status.StorageVersions[1].APIServerID = "a" },
			"FieldValueDuplicate status.storageVersions[1].apiServerID"},
		{"bad server id", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Status.StorageVersions[0].APIServerID = "A_" },
			"FieldValueInvalid status.storageVersions[0].apiServerID"},
		{"bad encoding version", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.StorageVersions[0].EncodingVersion = "a/b/c"
			sv.Status.StorageVersions[0].DecodableVersions = []string{"a/b/c"}
			sv.Status.StorageVersions[0].ServedVersions = nil
			sv.Status.CommonEncodingVersion = nil
		}, "FieldValueInvalid status.storageVersions[0].encodingVersion; FieldValueInvalid status.storageVersions[0].decodableVersions[0]"},
		{"decodable lacks encoding", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.StorageVersions[0].DecodableVersions = []string{"v1beta1"}
			sv.Status.StorageVersions[0].ServedVersions = nil
		}, "FieldValueInvalid status.storageVersions[0].decodableVersions"},
		{"served not decodable", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.StorageVersions[0].ServedVersions = []string{"coordination.k8s.io/v2"}
		}, "FieldValueInvalid status.storageVersions[0].servedVersions[0]"},
		{"bad served version", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.StorageVersions[0].ServedVersions = []string{"/V1"}
		}, "FieldValueInvalid status.storageVersions[0].servedVersions[0]; FieldValueInvalid status.storageVersions[0].servedVersions[0]"},
		{"common version when servers disagree", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.StorageVersions[1] = serverVersion("b", "coordination.k8s.io/v1beta1")
		}, "FieldValueInvalid status.commonEncodingVersion"},
		{"no common version when servers agree", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Status.CommonEncodingVersion = nil },
			"FieldValueInvalid status.commonEncodingVersion"},
		{"wrong common version", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Status.CommonEncodingVersion = ptr("v2") },
			"FieldValueInvalid status.commonEncodingVersion"},
		{"common version without servers", func(sv *apiserverinternalv1alpha1.StorageVersion) { sv.Status.StorageVersions = nil },
			"FieldValueInvalid status.commonEncodingVersion"},
		{"duplicate condition", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.Conditions = append(sv.Status.Conditions, sv.Status.Conditions[0])
		}, "FieldValueInvalid status[1].type"},
		{"bad condition", func(sv *apiserverinternalv1alpha1.StorageVersion) {
			sv.Status.Conditions[0] = apiserverinternalv1alpha1.StorageVersionCondition{Type: "a b", Status: "x y"}
		}, "FieldValueInvalid status[0].type; FieldValueInvalid status[0].status; FieldValueRequired status[0].reason; FieldValueRequired status[0].message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sv := validStorageVersion()
			c.mutate(sv)
			if got := strings.Join(fielderrors.TypesAndFields(Validate(sv)), "; "); got != c.want {
				t.Errorf("errors %q, want %q", got, c.want)
			}
			// The status subresource checks the status only.
			wantStatus := c.want
			if strings.HasPrefix(c.want, "FieldValue") && strings.Contains(c.want, " metadata.") {
				wantStatus = ""
			}
			if got := strings.Join(fielderrors.TypesAndFields(ValidateStatusUpdate(sv, validStorageVersion())), "; "); got != wantStatus {
				t.Errorf("status update errors %q, want %q", got, wantStatus)
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	sv := validStorageVersion()
	sv.Status.CommonEncodingVersion = nil
	errs := Validate(sv)
	if len(errs) != 1 || errs[0].Detail != "the common encoding version is coordination.k8s.io/v1" {
		t.Errorf("got %v", errs)
	}
	sv = validStorageVersion()
	sv.Status.StorageVersions[0].DecodableVersions = []string{"v1beta1"}
	sv.Status.StorageVersions[0].ServedVersions = nil
	errs = Validate(sv)
	if len(errs) != 1 || errs[0].Detail != "decodableVersions must include encodingVersion coordination.k8s.io/v1" {
		t.Errorf("got %v", errs)
	}
}

func TestTable(t *testing.T) {
	sv := validStorageVersion()
	for _, id := range []string{"c", "d"} {
		sv.Status.StorageVersions = append(sv.Status.StorageVersions, serverVersion(id, "coordination.k8s.io/v1"))
	}
	tbl, err := TableConvertor().ConvertToTable(t.Context(), sv, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Name,CommonEncodingVersion,StorageVersions,Age" {
		t.Errorf("columns %s", got)
	}
	cells := tbl.Rows[0].Cells
	if cells[1] != "coordination.k8s.io/v1" || cells[2] != "a=coordination.k8s.io/v1,b=coordination.k8s.io/v1,c=coordination.k8s.io/v1 + 1 more..." {
		t.Errorf("cells %q", cells)
	}
	empty := &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "core.pods"}}
	tbl, err = TableConvertor().ConvertToTable(t.Context(), empty, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cells := tbl.Rows[0].Cells; cells[1] != "<unset>" || cells[2] != "<unset>" {
		t.Errorf("cells %q", cells)
	}
}
