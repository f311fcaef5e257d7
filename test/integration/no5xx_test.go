package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNoServerErrorForClientInput sends malformed requests of many kinds:
// each must get a 4xx, never a 5xx, and the existing object must survive.
func TestNoServerErrorForClientInput(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const cm = "/api/v1/namespaces/default/configmaps"
	cases := []struct{ method, path, contentType, body string }{
		{"GET", cm + "?labelSelector=a%20in%20(", "", ""},
		{"GET", cm + "?fieldSelector=nope%3Dx", "", ""},
		{"GET", cm + "?resourceVersion=abc", "", ""},
		{"GET", cm + "?limit=-5&continue=garbage", "", ""},
		{"GET", cm + "?watch=true&resourceVersion=notanumber", "", ""},
		{"GET", cm + "?timeoutSeconds=abc", "", ""},
		{"POST", cm + "?dryRun=Sometimes", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}`},
		{"POST", cm + "?fieldValidation=Bogus", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}`},
		{"POST", cm + "?fieldValidation=Strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"unknown":1}`},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"wrongkind"}}`},
		{"POST", cm, "application/json", `{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"wrongversion"}}`},
		{"POST", cm, "application/json", `[]`},
		{"POST", cm, "application/json", `{"metadata":{"name":"` + strings.Repeat("a", 300) + `"}}`},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"bad label":"v"}}}`},
		{"POST", cm, "application/vnd.kubernetes.protobuf", "k8s\x00garbage"},
		{"POST", cm, "text/plain", "hello"},
		{"PUT", cm + "/keep", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`},
		{"PUT", cm + "/keep", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","resourceVersion":"x"}}`},
		{"PATCH", cm + "/keep", "application/json-patch+json", `[{"op":"explode","path":"/data"}]`},
		{"PATCH", cm + "/keep", "application/json-patch+json", `{"not":"a list"}`},
		{"PATCH", cm + "/keep", "application/merge-patch+json", `"string"`},
		{"PATCH", cm + "/keep", "application/strategic-merge-patch+json", `{"data":5}`},
		{"PATCH", cm + "/keep", "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\n"},
		{"PATCH", cm + "/keep?fieldManager=" + strings.Repeat("m", 200), "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n"},
		{"PATCH", cm + "/keep", "application/unknown", `{}`},
		{"PATCH", "/api/v1/namespaces/default/configmaps/missing", "application/merge-patch+json", `{"data":{"a":"b"}}`},
		{"DELETE", cm + "/keep", "application/json", `{"preconditions":{"uid":"wrong"}}`},
		{"DELETE", cm + "/keep", "application/json", `{"gracePeriodSeconds":"x"}`},
		{"POST", "/api/v1/namespaces", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Bad_Name"}}`},
		{"PUT", "/api/v1/namespaces/default/finalize", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"},"spec":{"finalizers":["bad"]}}`},
		{"PUT", "/api/v1/namespaces/default/status", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"},"status":{"phase":"Terminating"}}`},
		{"POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"bad"}}`},
		{"POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "application/json", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"missing"},"subjects":[{"kind":"User"}]}`},
		{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "application/json", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"c"},"rules":[{"verbs":[]}],"aggregationRule":{"clusterRoleSelectors":[{"matchExpressions":[{"key":"a","operator":"Bogus"}]}]}}`},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}`},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","fieldSelector":{"rawSelector":"a=b","requirements":[{"key":"a","operator":"In","values":["b"]}]}}}}`},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", "application/json", `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"u","resourceAttributes":{"namespace":"other","verb":"get"}}}`},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "application/json", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/missing/token", "application/json", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/default/token", "application/json", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":-1,"boundObjectRef":{"kind":"Secret","apiVersion":"v1"}}}`},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/default/token", "application/json", `{"apiVersion":"v1","kind":"ConfigMap"}`},
		{"GET", "/apis/nope.example.com/v1/things", "", ""},
		{"GET", "/api/v2", "", ""},
		// Bodies built to exhaust a parser: a YAML alias bomb (9^9 nodes
		// from a few lines), nesting past the JSON decoders' depth limit,
		// a number no float holds, invalid UTF-8, a byte-order mark, an
		// endless CBOR array and a protobuf length that runs off the end.
		{"POST", cm, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n" + yamlAliasBomb},
		{"PATCH", cm + "/keep?fieldManager=m", "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\n" + yamlAliasBomb},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":` + strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001) + `}`},
		{"POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge","generation":1e400}}`},
		{"POST", cm, "application/json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"utf\xff\"}}"},
		{"POST", cm, "application/json", "\xef\xbb\xbf{}"},
		{"POST", cm, "application/cbor", "\xd9\xd9\xf7" + strings.Repeat("\x9f", 5000)},
		{"POST", cm, "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\x80\x80\x80\x80\x10"},
	}
	for _, c := range cases {
		code, body := rawRequest(t, s.AdminConfig, c.method, c.path, c.contentType, []byte(c.body))
		if code >= 500 || code < 400 {
			t.Errorf("%s %s (%s %.60q): got %d, want a 4xx\n%.300s", c.method, c.path, c.contentType, c.body, code, body)
		}
	}
	got, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("object changed by bad requests: %v %v", got, err)
	}
	if _, err := s.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// yamlAliasBomb is a YAML mapping whose aliases expand to 9^9 scalars.
const yamlAliasBomb = `a: &a [x,x,x,x,x,x,x,x,x]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`
