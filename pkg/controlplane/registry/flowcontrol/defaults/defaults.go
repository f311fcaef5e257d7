// Package defaults sets the defaults of flowcontrol.apiserver.k8s.io/v1
// objects, as upstream's pkg/apis/flowcontrol/v1 defaulters do; k8s.io/api
// ships none.
package defaults

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/utils/ptr"
)

// Upstream's default values.
const (
	// MatchingPrecedence is a FlowSchema's spec.matchingPrecedence when unset.
	MatchingPrecedence int32 = 1000
	// HandSize, Queues and QueueLengthLimit fill an unset queuing configuration.
	HandSize         int32 = 8
	Queues           int32 = 64
	QueueLengthLimit int32 = 50
	// NominalConcurrencyShares is a limited priority level's share when unset.
	// In v1 an explicit 0 is kept: only nil is defaulted.
	NominalConcurrencyShares int32 = 30
)

// FlowSchema defaults a FlowSchema's spec.
func FlowSchema(fs *flowcontrolv1.FlowSchema) {
	FlowSchemaSpec(&fs.Spec)
}

// FlowSchemaSpec sets matchingPrecedence 1000 when it is 0.
func FlowSchemaSpec(spec *flowcontrolv1.FlowSchemaSpec) {
	if spec.MatchingPrecedence == 0 {
		spec.MatchingPrecedence = MatchingPrecedence
	}
}

// PriorityLevelConfiguration defaults the limited or exempt configuration
// and the queuing parameters of a priority level.
func PriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To(NominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			queuing(q)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}

func queuing(q *flowcontrolv1.QueuingConfiguration) {
	if q.HandSize == 0 {
		q.HandSize = HandSize
	}
	if q.Queues == 0 {
		q.Queues = Queues
	}
	if q.QueueLengthLimit == 0 {
		q.QueueLengthLimit = QueueLengthLimit
	}
}
