package leasecandidate

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/test/fielderrors"
)

func validCandidate() *coordinationv1beta1.LeaseCandidate {
	return &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager-node_1.x", Namespace: "kube-system"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:        "kube-controller-manager",
			BinaryVersion:    "1.37.1",
			EmulationVersion: "1.36.0",
			Strategy:         coordinationv1.OldestEmulationVersion,
		},
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*coordinationv1beta1.LeaseCandidate)
		want   []string
	}{
		{"valid", func(*coordinationv1beta1.LeaseCandidate) {}, nil},
		{"custom strategy without emulation version", func(c *coordinationv1beta1.LeaseCandidate) {
			c.Spec.Strategy, c.Spec.EmulationVersion = "example.com/mine", ""
		}, nil},
		{"config map key name", func(c *coordinationv1beta1.LeaseCandidate) { c.Name = "_a.b-c" }, nil},
		{"bad name", func(c *coordinationv1beta1.LeaseCandidate) { c.Name = "a/b" }, []string{"FieldValueInvalid metadata.name"}},
		{"no namespace", func(c *coordinationv1beta1.LeaseCandidate) { c.Namespace = "" }, []string{"FieldValueRequired metadata.namespace"}},
		{"no lease name", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.LeaseName = "" }, []string{"FieldValueRequired spec.leaseName"}},
		{"no binary version", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.BinaryVersion = "" }, []string{"FieldValueRequired spec.binaryVersion"}},
		// As upstream, an unparsable binary version also counts as 0.0.0,
		// older than the emulation version.
		{"binary version not semver", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.BinaryVersion = "v1.37" },
			[]string{"FieldValueInvalid spec.binaryVersion", "FieldValueInvalid spec.binaryVersion"}},
		{"emulation version not semver", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.EmulationVersion = "1.36" },
			[]string{"FieldValueInvalid spec.emulationVersion", "FieldValueRequired spec.emulationVersion"}},
		{"binary older than emulation", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.BinaryVersion = "1.35.0" }, []string{"FieldValueInvalid spec.binaryVersion"}},
		{"no strategy", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.Strategy = "" }, []string{"FieldValueRequired spec.strategy"}},
		{"oldest emulation version without emulation version", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.EmulationVersion = "" },
			[]string{"FieldValueRequired spec.emulationVersion"}},
		{"unknown strategy", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.Strategy = "Newest" }, []string{"FieldValueNotSupported spec.strategy.strategy"}},
		{"bad qualified strategy", func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.Strategy = "example.com/-x" }, []string{"FieldValueInvalid spec.strategy.strategy"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lc := validCandidate()
			c.mutate(lc)
			if got := fielderrors.TypesAndFields(Validate(lc)); strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("errors %q, want %q", got, c.want)
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	lc := validCandidate()
	lc.Spec.BinaryVersion = "1.35.0"
	errs := Validate(lc)
	if len(errs) != 1 || errs[0].Detail != "must be greater than or equal to `emulationVersion`" {
		t.Errorf("got %v", errs)
	}
	lc = validCandidate()
	lc.Spec.EmulationVersion = ""
	errs = Validate(lc)
	if len(errs) != 1 || errs[0].Detail != "must be specified when `strategy` is 'OldestEmulationVersion'" {
		t.Errorf("got %v", errs)
	}
}

func TestValidateUpdate(t *testing.T) {
	old := validCandidate()
	old.ResourceVersion = "1"
	lc := old.DeepCopy()
	lc.Spec.BinaryVersion = "1.38.0"
	now := metav1.NowMicro()
	lc.Spec.PingTime, lc.Spec.RenewTime = &now, &now
	if errs := ValidateUpdate(lc, old); len(errs) != 0 {
		t.Errorf("valid update: %v", errs)
	}
	lc.Spec.LeaseName = "other"
	if got := fielderrors.TypesAndFields(ValidateUpdate(lc, old)); strings.Join(got, "; ") != "FieldValueInvalid spec.leaseName" {
		t.Errorf("lease name change: %q", got)
	}
}

func TestTable(t *testing.T) {
	lc := validCandidate()
	tbl, err := TableConvertor().ConvertToTable(t.Context(), lc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Name,LeaseName,BinaryVersion,EmulationVersion,Age" {
		t.Errorf("columns %s", got)
	}
	cells := tbl.Rows[0].Cells
	if cells[1] != "kube-controller-manager" || cells[2] != "1.37.1" || cells[3] != "1.36.0" {
		t.Errorf("cells %v", cells)
	}
}
