package validation

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/defaults"
)

// errStrings renders errors as "type path" for comparison.
func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func checkErrs(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := errStrings(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n got  %q\n want %q\n(%v)", got, want, errs)
	}
}

func validFlowSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "fs"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl"},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{
					{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
					{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "devs"}},
					{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ns", Name: "*"}},
				},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
					Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz", "/apis/*"},
				}},
			}},
		},
	}
}

func TestValidateFlowSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []string
	}{
		{"valid", func(*flowcontrolv1.FlowSchema) {}, nil},
		{"bad name", func(fs *flowcontrolv1.FlowSchema) { fs.Name = "Bad_Name" }, []string{"FieldValueInvalid metadata.name"}},
		{"namespace set", func(fs *flowcontrolv1.FlowSchema) { fs.Namespace = "ns" }, []string{"FieldValueForbidden metadata.namespace"}},
		{"precedence 0", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 }, []string{"FieldValueInvalid spec.matchingPrecedence"}},
		{"precedence too large", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }, []string{"FieldValueInvalid spec.matchingPrecedence"}},
		{"precedence 10000", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10000 }, nil},
		{"precedence 1 not exempt", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }, []string{"FieldValueInvalid spec.matchingPrecedence"}},
		{"bad distinguisher", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByColor" },
			[]string{"FieldValueNotSupported spec.distinguisherMethod.type"}},
		{"missing priority level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			[]string{"FieldValueRequired spec.priorityLevelConfiguration.name"}},
		{"bad priority level name", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "A B" },
			[]string{"FieldValueInvalid spec.priorityLevelConfiguration.name"}},
		{"no subjects", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects = nil },
			[]string{"FieldValueRequired spec.rules[0].subjects"}},
		{"no rules", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules, fs.Spec.Rules[0].NonResourceRules = nil, nil
		}, []string{"FieldValueRequired spec.rules[0]"}},
		{"unknown subject kind", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[0].Kind = "Robot" },
			[]string{"FieldValueNotSupported spec.rules[0].subjects[0].kind"}},
		{"user subject without user", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[0].User = nil
			fs.Spec.Rules[0].Subjects[0].Group = &flowcontrolv1.GroupSubject{Name: "g"}
		}, []string{"FieldValueRequired spec.rules[0].subjects[0].user", "FieldValueForbidden spec.rules[0].subjects[0].group"}},
		{"empty user name", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[0].User.Name = "" },
			[]string{"FieldValueRequired spec.rules[0].subjects[0].user.name"}},
		{"empty group name", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[1].Group.Name = "" },
			[]string{"FieldValueRequired spec.rules[0].subjects[1].group.name"}},
		{"service account without namespace", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[2].ServiceAccount = &flowcontrolv1.ServiceAccountSubject{Name: "Bad!"}
		}, []string{"FieldValueInvalid spec.rules[0].subjects[2].serviceAccount.name", "FieldValueRequired spec.rules[0].subjects[2].serviceAccount.namespace"}},
		{"service account missing", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[2].ServiceAccount = nil },
			[]string{"FieldValueRequired spec.rules[0].subjects[2].serviceAccount"}},
		{"unsupported verb", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules[0].Verbs = []string{"get", "explode"}
		},
			[]string{"FieldValueNotSupported spec.rules[0].resourceRules[0].verbs"}},
		{"wildcard verb with others", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].NonResourceRules[0].Verbs = []string{"*", "get"} },
			[]string{"FieldValueInvalid spec.rules[0].nonResourceRules[0].verbs"}},
		{"resource rule empty", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules[0] = flowcontrolv1.ResourcePolicyRule{}
		}, []string{
			"FieldValueRequired spec.rules[0].resourceRules[0].verbs",
			"FieldValueRequired spec.rules[0].resourceRules[0].apiGroups",
			"FieldValueRequired spec.rules[0].resourceRules[0].resources",
			"FieldValueRequired spec.rules[0].resourceRules[0].namespaces",
		}},
		{"cluster scope without namespaces", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules[0].Namespaces = nil
			fs.Spec.Rules[0].ResourceRules[0].ClusterScope = true
		}, nil},
		{"wildcards mixed", func(fs *flowcontrolv1.FlowSchema) {
			r := &fs.Spec.Rules[0].ResourceRules[0]
			r.APIGroups, r.Resources, r.Namespaces = []string{"*", "apps"}, []string{"*", "pods"}, []string{"*", "ns"}
		}, []string{
			"FieldValueInvalid spec.rules[0].resourceRules[0].apiGroups",
			"FieldValueInvalid spec.rules[0].resourceRules[0].resources",
			"FieldValueInvalid spec.rules[0].resourceRules[0].namespaces",
		}},
		{"bad namespace", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules[0].Namespaces = []string{"ok", "Not OK"}
		},
			[]string{"FieldValueInvalid spec.rules[0].resourceRules[0].namespaces[1]"}},
		{"bad urls", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"healthz", "/a b", "/a//b", "/a*", "/a/*/b/*", "", "/", "/ok/*"}
		}, []string{
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[0]",
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[1]",
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[2]",
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[3]",
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[4]",
			"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[5]",
		}},
		{"no urls", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = nil },
			[]string{"FieldValueRequired spec.rules[0].nonResourceRules[0].nonResourceURLs"}},
		{"duplicate and empty conditions", func(fs *flowcontrolv1.FlowSchema) {
			fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling"}, {Type: "Dangling"}, {}}
		}, []string{"FieldValueDuplicate status.conditions[1].type", "FieldValueRequired status.conditions[2].type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := validFlowSchema()
			tc.mutate(fs)
			checkErrs(t, ValidateFlowSchema(fs), tc.want)
		})
	}
}

func TestMandatoryFlowSchemas(t *testing.T) {
	for _, m := range bootstrap.MandatoryFlowSchemas {
		fs := m.DeepCopy()
		defaults.FlowSchema(fs)
		checkErrs(t, ValidateFlowSchema(fs), nil)
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType}
		checkErrs(t, ValidateFlowSchema(fs), []string{"FieldValueInvalid spec"})
	}
	for _, s := range bootstrap.SuggestedFlowSchemas {
		fs := s.DeepCopy()
		defaults.FlowSchema(fs)
		checkErrs(t, ValidateFlowSchema(fs), nil)
	}
	exempt, _ := MandatoryFlowSchema(flowcontrolv1.FlowSchemaNameExempt)
	exempt.ResourceVersion = "1"
	old := exempt.DeepCopy()
	exempt.Spec.Rules = nil
	if errs := ValidateFlowSchemaUpdate(exempt, old); len(errs) != 1 || !strings.Contains(errs[0].Detail, "spec of 'exempt' must equal the fixed value") {
		t.Errorf("changing the exempt flow schema: %v", errs)
	}
}

func limitedLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
			},
		},
	}
	defaults.PriorityLevelConfiguration(pl)
	return pl
}

func TestValidatePriorityLevelConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []string
	}{
		{"valid", func(*flowcontrolv1.PriorityLevelConfiguration) {}, nil},
		{"zero shares allowed", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](0)
		}, nil},
		{"negative shares", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](-1)
		},
			[]string{"FieldValueInvalid spec.limited.nominalConcurrencyShares"}},
		{"lendable out of range", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LendablePercent = ptr.To[int32](101)
		},
			[]string{"FieldValueInvalid spec.limited.lendablePercent"}},
		{"negative borrowing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.BorrowingLimitPercent = ptr.To[int32](-1)
		},
			[]string{"FieldValueInvalid spec.limited.borrowingLimitPercent"}},
		{"unknown type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "Unlimited" },
			[]string{"FieldValueNotSupported spec.type"}},
		{"missing type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "" },
			[]string{"FieldValueRequired spec.type"}},
		{"exempt type on other name", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
		},
			[]string{"FieldValueInvalid spec.type", "FieldValueForbidden spec.limited"}},
		{"limited missing", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil },
			[]string{"FieldValueRequired spec.limited"}},
		{"exempt on limited", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, []string{"FieldValueForbidden spec.exempt"}},
		{"reject with queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, []string{"FieldValueForbidden spec.limited.limitResponse.queuing"}},
		{"queue without queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Queuing = nil },
			[]string{"FieldValueRequired spec.limited.limitResponse.queuing"}},
		{"unknown limit response", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Type = "Drop" },
			[]string{"FieldValueNotSupported spec.limited.limitResponse.type"}},
		{"missing limit response", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Type = "" },
			[]string{"FieldValueRequired spec.limited.limitResponse.type"}},
		{"bad queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: -1, HandSize: -1, QueueLengthLimit: -1}
		}, []string{
			"FieldValueInvalid spec.limited.limitResponse.queuing.queueLengthLimit",
			"FieldValueInvalid spec.limited.limitResponse.queuing.queues",
			"FieldValueInvalid spec.limited.limitResponse.queuing.handSize",
		}},
		{"too many queues", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = MaxQueues + 1
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 1
		}, []string{"FieldValueInvalid spec.limited.limitResponse.queuing.queues"}},
		{"hand larger than deck", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 65
		}, []string{"FieldValueInvalid spec.limited.limitResponse.queuing.handSize"}},
		{"too much entropy", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = MaxQueues
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = 60
		}, []string{"FieldValueInvalid spec.limited.limitResponse.queuing.handSize"}},
		{"round-trip annotation", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": "true"}
		}, []string{"FieldValueForbidden metadata.annotations"}},
		{"duplicate condition", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "A"}, {Type: "A"}}
		}, []string{"FieldValueDuplicate status.conditions[1].type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := limitedLevel("pl")
			tc.mutate(pl)
			checkErrs(t, ValidatePriorityLevelConfiguration(pl), tc.want)
		})
	}
}

func TestMandatoryPriorityLevels(t *testing.T) {
	for _, list := range [][]*flowcontrolv1.PriorityLevelConfiguration{bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations} {
		for _, m := range list {
			pl := m.DeepCopy()
			defaults.PriorityLevelConfiguration(pl)
			checkErrs(t, ValidatePriorityLevelConfiguration(pl), nil)
		}
	}

	catchAll, _ := MandatoryPriorityLevelConfiguration(flowcontrolv1.PriorityLevelConfigurationNameCatchAll)
	catchAll.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](50)
	checkErrs(t, ValidatePriorityLevelConfiguration(catchAll), []string{"FieldValueInvalid spec"})

	// Administrators may tune the exempt level's spec.exempt, nothing else.
	exempt, _ := MandatoryPriorityLevelConfiguration(flowcontrolv1.PriorityLevelConfigurationNameExempt)
	exempt.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
	exempt.Spec.Exempt.LendablePercent = ptr.To[int32](20)
	checkErrs(t, ValidatePriorityLevelConfiguration(exempt), nil)
	exempt.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	exempt.Spec.Limited = limitedLevel("x").Spec.Limited
	exempt.Spec.Exempt = nil
	errs := ValidatePriorityLevelConfiguration(exempt)
	checkErrs(t, errs, []string{"FieldValueInvalid spec.type", "FieldValueInvalid spec"})
	if !strings.Contains(errs[1].Detail, "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value") {
		t.Errorf("message: %q", errs[1].Detail)
	}
}
