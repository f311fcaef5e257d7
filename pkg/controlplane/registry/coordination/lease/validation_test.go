package lease

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	strategy := func(v string) *coordinationv1.CoordinatedLeaseStrategy {
		s := coordinationv1.CoordinatedLeaseStrategy(v)
		return &s
	}
	cases := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want string
	}{
		{"valid", coordinationv1.LeaseSpec{HolderIdentity: str("a"), LeaseDurationSeconds: i32(15)}, ""},
		{"zero duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: i32(0)}, "spec.leaseDurationSeconds"},
		{"negative transitions", coordinationv1.LeaseSpec{LeaseTransitions: i32(-1)}, "spec.leaseTransitions"},
		{"preferred holder without strategy", coordinationv1.LeaseSpec{PreferredHolder: str("b")}, "spec.preferredHolder"},
		{"unknown strategy", coordinationv1.LeaseSpec{Strategy: strategy("Newest")}, "spec.strategy.strategy"},
		{"qualified strategy", coordinationv1.LeaseSpec{Strategy: strategy("example.com/mine")}, ""},
	}
	for _, c := range cases {
		errs := Validate(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}, Spec: c.spec})
		if c.want == "" && len(errs) != 0 || c.want != "" && (len(errs) != 1 || errs[0].Field != c.want) {
			t.Errorf("%s: errors %v, want one at %q", c.name, errs, c.want)
		}
	}
}
