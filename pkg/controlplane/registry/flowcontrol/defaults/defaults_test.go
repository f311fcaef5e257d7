package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/utils/ptr"
)

func TestFlowSchema(t *testing.T) {
	for _, tc := range []struct {
		in, want int32
	}{{0, 1000}, {1, 1}, {500, 500}} {
		fs := &flowcontrolv1.FlowSchema{Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: tc.in}}
		FlowSchema(fs)
		if fs.Spec.MatchingPrecedence != tc.want {
			t.Errorf("matchingPrecedence %d: got %d, want %d", tc.in, fs.Spec.MatchingPrecedence, tc.want)
		}
	}
}

func TestPriorityLevelConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want flowcontrolv1.PriorityLevelConfigurationSpec
	}{{
		name: "limited nil shares and queuing get defaults",
		in: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
		}},
		want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](30),
			LendablePercent:          ptr.To[int32](0),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
				Queues: 64, HandSize: 8, QueueLengthLimit: 50,
			}},
		}},
	}, {
		name: "explicit zero shares are kept (v1)",
		in: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](0),
			LendablePercent:          ptr.To[int32](10),
			LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}},
		want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](0),
			LendablePercent:          ptr.To[int32](10),
			LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}},
	}, {
		name: "queuing values set are kept",
		in: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](5),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
				Queues: 2, HandSize: 1, QueueLengthLimit: 3,
			}},
		}},
		want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](5),
			LendablePercent:          ptr.To[int32](0),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
				Queues: 2, HandSize: 1, QueueLengthLimit: 3,
			}},
		}},
	}, {
		name: "exempt",
		in:   flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{}},
		want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0),
		}},
	}, {
		name: "exempt without exempt section stays so",
		in:   flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt},
		want: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: tc.in}
			PriorityLevelConfiguration(pl)
			if diff := cmp.Diff(tc.want, pl.Spec); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}
