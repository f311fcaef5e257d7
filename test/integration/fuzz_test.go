package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// The fuzz targets below send what go test -fuzz makes of their seeds to a
// real in-process server (embedded etcd, HTTPS, the generic stack with a
// custom resource). Without -fuzz, go test runs the seeds as ordinary
// tests; docs/testing.md says how to fuzz longer. Every target holds the
// server to gcp's promise for client input: an answer (no dropped
// connection, no hang), never a 5xx, and nothing stored from a rejected
// request.

// fuzzNamespace is where the fuzzed requests go.
const fuzzNamespace = "fuzz"

// fuzzCRD is the custom resource the targets fuzz beside the native ones.
var fuzzCRD = &apiextensionsv1.CustomResourceDefinition{
	ObjectMeta: metav1.ObjectMeta{Name: "widgets.fuzz.example.com"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "fuzz.example.com",
		Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"size":  {Type: "integer", Minimum: ptr.To(0.0)},
						"tags":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}, XListType: ptr.To("set")},
						"owner": {Type: "string", MaxLength: ptr.To[int64](63)},
					}},
				},
			}},
		}},
	},
}

// fuzzServer is the server one fuzz target's process sends to.
type fuzzServer struct {
	*testserver.Server
	admin *http.Client
	host  string
}

// startFuzzServer starts the server with namespace fuzz and the widgets
// CRD.
func startFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	s := testserver.Start(f, testserver.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{fuzzCRD.DeepCopy()}})
	if _, err := s.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzNamespace}}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	return &fuzzServer{Server: s, admin: fuzzHTTPClient(f, s.AdminConfig), host: s.AdminConfig.Host}
}

func fuzzHTTPClient(f *testing.F, cfg *rest.Config) *http.Client {
	f.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		f.Fatal(err)
	}
	c.Timeout = 0 // each request has its own deadline
	return c
}

// send sends one request and returns the status and, for an error, the
// body. A transport error (a dropped connection) or no answer within 10 s
// fails t. Success bodies are not read: a watch would stream on.
func send(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s (Content-Type %q): no answer: %v", req.Method, req.URL.RequestURI(), req.Header.Get("Content-Type"), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		return resp.StatusCode, ""
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		t.Fatalf("%s %s: reading the %d answer: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
	}
	return resp.StatusCode, string(body)
}

// names lists the names, with resource versions, in a collection as the
// admin sees it, to tell whether a request stored something.
func (s *fuzzServer) names(t *testing.T, collection string) []string {
	t.Helper()
	var (
		code int
		body string
	)
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		code, body = s.request(t, http.MethodGet, collection, nil)
		if code == http.StatusTooManyRequests { // a new custom resource's watch cache is starting
			return fmt.Errorf("list %s: %d %s", collection, code, body)
		}
		return nil
	})
	switch {
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return nil // nothing there, or a review: nothing is stored
	case code != http.StatusOK:
		t.Fatalf("list %s: %d %s", collection, code, body)
	}
	var list struct {
		Items []struct{ Metadata metav1.ObjectMeta }
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("list %s: %v", collection, err)
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Metadata.Namespace+"/"+item.Metadata.Name+"@"+item.Metadata.ResourceVersion)
	}
	slices.Sort(names)
	return names
}

// creatable is a resource the server creates: its collection's path in
// namespace fuzz (or cluster-wide), the kind it takes, and whether it
// is updated with PUT.
type creatable struct {
	collection, apiVersion, kind string
	updatable                    bool
	stored                       string // the name of the object FuzzWrite updates
}

// creatables lists, from discovery, every resource the server creates,
// native and custom, in a fixed order.
func (s *fuzzServer) creatables(f *testing.F) []creatable {
	f.Helper()
	_, lists, err := s.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		f.Fatal(err)
	}
	var out []creatable
	for _, l := range lists {
		prefix := "/apis/" + l.GroupVersion
		if !strings.Contains(l.GroupVersion, "/") {
			prefix = "/api/" + l.GroupVersion
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") {
				continue
			}
			c := creatable{collection: prefix + "/" + r.Name, apiVersion: l.GroupVersion, kind: r.Kind, updatable: slices.Contains(r.Verbs, "update")}
			if r.Namespaced {
				c.collection = prefix + "/namespaces/" + fuzzNamespace + "/" + r.Name
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b creatable) int { return strings.Compare(a.collection, b.collection) })
	return out
}

// createContentTypes are the media types FuzzWrite sends bodies as.
var createContentTypes = []string{
	"application/json",
	"application/yaml",
	"application/vnd.kubernetes.protobuf",
	"application/cbor",
	"application/apply-patch+yaml",
	"text/plain",
}

// createSeeds are valid objects, by kind, for the fuzzer to start from;
// other kinds start from apiVersion, kind and a name.
var createSeeds = map[string]string{
	"ConfigMap":                        `{"metadata":{"name":"seed","labels":{"a":"b"}},"data":{"k":"v"},"binaryData":{"b":"AAE="}}`,
	"Secret":                           `{"metadata":{"name":"seed"},"type":"kubernetes.io/basic-auth","stringData":{"username":"u","password":"p"}}`,
	"ServiceAccount":                   `{"metadata":{"name":"seed"},"secrets":[{"name":"s"}],"imagePullSecrets":[{"name":"p"}]}`,
	"Namespace":                        `{"metadata":{"name":"seed"},"spec":{"finalizers":["kubernetes"]}}`,
	"ResourceQuota":                    `{"metadata":{"name":"seed"},"spec":{"hard":{"configmaps":"10","count/secrets":"5"}}}`,
	"Lease":                            `{"metadata":{"name":"seed"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15,"leaseTransitions":1,"renewTime":"2026-01-01T00:00:00.000000Z"}}`,
	"Role":                             `{"metadata":{"name":"seed"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}]}`,
	"RoleBinding":                      `{"metadata":{"name":"seed"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"u","apiGroup":"rbac.authorization.k8s.io"}]}`,
	"ClusterRole":                      `{"metadata":{"name":"seed"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b"}}]},"rules":[{"nonResourceURLs":["/x"],"verbs":["get"]}]}`,
	"ClusterRoleBinding":               `{"metadata":{"name":"seed"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"fuzz"}]}`,
	"Event":                            `{"metadata":{"name":"seed"},"involvedObject":{"kind":"ConfigMap","namespace":"fuzz","name":"x"},"reason":"R","message":"m","type":"Normal","firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1,"source":{"component":"c"}}`,
	"ValidatingWebhookConfiguration":   `{"metadata":{"name":"seed"},"webhooks":[{"name":"w.example.com","clientConfig":{"url":"https://example.com/x"},"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],"sideEffects":"None","admissionReviewVersions":["v1"],"matchConditions":[{"name":"m","expression":"true"}]}]}`,
	"MutatingWebhookConfiguration":     `{"metadata":{"name":"seed"},"webhooks":[{"name":"w.example.com","clientConfig":{"service":{"namespace":"n","name":"s","port":443}},"rules":[{"operations":["*"],"apiGroups":["*"],"apiVersions":["*"],"resources":["*/*"],"scope":"Namespaced"}],"sideEffects":"NoneOnDryRun","admissionReviewVersions":["v1"],"reinvocationPolicy":"IfNeeded"}]}`,
	"ValidatingAdmissionPolicy":        `{"metadata":{"name":"seed"},"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]},"variables":[{"name":"v","expression":"object.metadata.name"}],"validations":[{"expression":"variables.v != 'x'","messageExpression":"'no'"}],"auditAnnotations":[{"key":"k","valueExpression":"'v'"}]}}`,
	"ValidatingAdmissionPolicyBinding": `{"metadata":{"name":"seed"},"spec":{"policyName":"p","validationActions":["Deny","Audit"],"paramRef":{"name":"x","parameterNotFoundAction":"Deny"}}}`,
	"MutatingAdmissionPolicy":          `{"metadata":{"name":"seed"},"spec":{"matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]},"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}],"reinvocationPolicy":"Never"}}`,
	"MutatingAdmissionPolicyBinding":   `{"metadata":{"name":"seed"},"spec":{"policyName":"p"}}`,
	"FlowSchema":                       `{"metadata":{"name":"seed"},"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"Group","group":{"name":"g"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}]}]}}`,
	"PriorityLevelConfiguration":       `{"metadata":{"name":"seed"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"lendablePercent":10,"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":4,"queueLengthLimit":10}}}}}`,
	"CertificateSigningRequest":        `{"metadata":{"name":"seed"},"spec":{"request":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==","signerName":"kubernetes.io/kube-apiserver-client","usages":["client auth"],"expirationSeconds":600}}`,
	"ClusterTrustBundle":               `{"metadata":{"name":"seed"},"spec":{"trustBundle":"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"}}`,
	"TokenReview":                      `{"spec":{"token":"abc","audiences":["x"]}}`,
	"SubjectAccessReview":              `{"spec":{"user":"u","groups":["g"],"resourceAttributes":{"namespace":"fuzz","verb":"get","resource":"configmaps","labelSelector":{"rawSelector":"a=b"}}}}`,
	"SelfSubjectAccessReview":          `{"spec":{"nonResourceAttributes":{"path":"/x","verb":"get"}}}`,
	"LocalSubjectAccessReview":         `{"spec":{"user":"u","resourceAttributes":{"namespace":"fuzz","verb":"list","resource":"secrets","fieldSelector":{"rawSelector":"metadata.name=x"}}}}`,
	"SelfSubjectRulesReview":           `{"spec":{"namespace":"fuzz"}}`,
	"SelfSubjectReview":                `{}`,
	"CustomResourceDefinition":         `{"metadata":{"name":"things.seed.example.com"},"spec":{"group":"seed.example.com","scope":"Cluster","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-validations":[{"rule":"self.metadata.name != 'x'"}],"properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`,
	"APIService":                       `{"metadata":{"name":"v1.seed.example.com"},"spec":{"group":"seed.example.com","version":"v1","service":{"namespace":"fuzz","name":"s","port":443},"insecureSkipTLSVerify":true,"groupPriorityMinimum":100,"versionPriority":10}}`,
	"Widget":                           `{"metadata":{"name":"seed"},"spec":{"size":3,"tags":["a","b"],"owner":"o"}}`,
	"events.k8s.io/v1/Event":           `{"metadata":{"name":"seed-events"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"example.com/c","reportingInstance":"i","action":"A","reason":"R","regarding":{"kind":"ConfigMap","namespace":"fuzz","name":"x"},"note":"n","type":"Normal"}`,
}

// certificateSeeds adds to seeds a CertificateSigningRequest with a real
// request and a ClusterTrustBundle with the server's CA.
func certificateSeeds(f *testing.F, s *fuzzServer, seeds map[string]string) map[string]string {
	f.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u", Organization: []string{"g"}}}, key)
	if err != nil {
		f.Fatal(err)
	}
	csr := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	ca, err := os.ReadFile(s.PKI.CACert)
	if err != nil {
		f.Fatal(err)
	}
	bundle, err := json.Marshal(string(ca))
	if err != nil {
		f.Fatal(err)
	}
	out := maps.Clone(seeds)
	out["CertificateSigningRequest"] = `{"metadata":{"name":"seed"},"spec":{"request":"` + csr + `","signerName":"kubernetes.io/kube-apiserver-client","usages":["client auth"],"expirationSeconds":600}}`
	out["ClusterTrustBundle"] = `{"metadata":{"name":"seed"},"spec":{"trustBundle":` + string(bundle) + `}}`
	return out
}

// seedBody is a creatable's seed object as JSON, from seeds by
// apiVersion/kind or by kind.
func seedBody(c creatable, seeds map[string]string) []byte {
	seed, ok := seeds[c.apiVersion+"/"+c.kind]
	if !ok {
		seed, ok = seeds[c.kind]
	}
	if !ok {
		seed = `{"metadata":{"name":"seed"}}`
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(seed), &obj); err != nil {
		panic(fmt.Sprintf("seed for %s: %v", c.kind, err))
	}
	obj["apiVersion"], obj["kind"] = c.apiVersion, c.kind
	b, _ := json.Marshal(obj)
	return b
}

// protobufBody encodes a JSON seed of a kind client-go knows as protobuf,
// or returns nil.
func protobufBody(jsonBody []byte) []byte {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(jsonBody, nil, nil)
	if err != nil {
		return nil
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		return nil
	}
	return buf.Bytes()
}

// notStoredForUpdates are the kinds FuzzWrite does not store a seed
// object of to fuzz updates: a stored webhook configuration or
// APIService pointing nowhere would fail other requests.
var notStoredForUpdates = []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService"}

// FuzzWrite sends bodies, in every content type, as dry-run creates to
// every resource the server creates, and as dry-run updates of a stored
// object to every resource it updates: the decode, defaulting, admission
// and validation path (create and update) of each native registry and of
// a custom resource. Dry run stores nothing, so the collection must be
// unchanged whatever the answer.
func FuzzWrite(f *testing.F) {
	s := startFuzzServer(f)
	resources := s.creatables(f)
	if len(resources) < 25 {
		f.Fatalf("discovery lists only %d creatable resources: %v", len(resources), resources)
	}
	index := func(kind string) uint8 {
		for i, r := range resources {
			if r.kind == kind {
				return uint8(i)
			}
		}
		f.Fatalf("no creatable %s", kind)
		return 0
	}
	seeds := certificateSeeds(f, s, createSeeds)
	updates := 0
	for i, r := range resources {
		body := seedBody(r, seeds)
		f.Add(uint8(i), false, uint8(0), body)
		if pb := protobufBody(body); pb != nil {
			f.Add(uint8(i), false, uint8(2), pb)
		}
		if !r.updatable || slices.Contains(notStoredForUpdates, r.kind) {
			continue
		}
		// A stored object to update; its JSON, resourceVersion included,
		// is the update's seed (dry run keeps it valid).
		if code, answer := s.request(f, http.MethodPost, r.collection, body); code != http.StatusCreated {
			f.Logf("no update seed for %s: %d %.200s", r.kind, code, answer)
			continue
		}
		var meta struct{ Metadata metav1.ObjectMeta }
		if err := json.Unmarshal(body, &meta); err != nil {
			f.Fatal(err)
		}
		code, stored := s.request(f, http.MethodGet, r.collection+"/"+meta.Metadata.Name, nil)
		if code != http.StatusOK {
			f.Fatalf("get the %s seed: %d %s", r.kind, code, stored)
		}
		resources[i].stored = meta.Metadata.Name
		f.Add(uint8(i), true, uint8(0), []byte(stored))
		if pb := protobufBody([]byte(stored)); pb != nil {
			f.Add(uint8(i), true, uint8(2), pb)
		}
		updates++
	}
	if updates < 20 {
		f.Fatalf("only %d kinds have an update seed", updates)
	}
	// The cases issue 16 found answering 5xx or panicking.
	widget, cm := index("Widget"), index("ConfigMap")
	f.Add(widget, false, uint8(2), []byte("k8s\x00\n\x0b\n\x02v1\x12\x05Widget\x12\x00"))
	f.Add(widget, true, uint8(2), protobufBody(seedBody(resources[cm], seeds)))
	f.Add(widget, false, uint8(0), []byte(`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"big","annotations":{"a":"`+strings.Repeat("x", 2<<20)+`"}}}`))
	f.Add(cm, true, uint8(0), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seed","finalizers":["`+strings.Repeat("a/b\",\"", 200_000)+`x/y"]}}`))
	f.Add(cm, false, uint8(1), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: 1}\n"))
	f.Add(cm, false, uint8(3), []byte("\xa1\x64kind\x69ConfigMap"))
	f.Add(widget, true, uint8(0), []byte(`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"seed"},"spec":{"size":-1,"tags":["a","a"],"owner":5}}`))
	// Issue 28's shapes, at and past the limits on depth and width, so the
	// fuzzer mutates from there: nested objects and lists, YAML's compact
	// sequences, and one map with as many keys as the limit allows and one
	// more.
	for _, depth := range []int{nesting.Limit - 2, nesting.Limit + 1} {
		f.Add(widget, false, uint8(0), []byte(`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"deep"},"x":`+
			strings.Repeat(`{"x":[`, depth/2)+"1"+strings.Repeat("]}", depth/2)+`}`))
		f.Add(widget, true, uint8(1), []byte("apiVersion: fuzz.example.com/v1\nkind: Widget\nmetadata: {name: seed}\nx:\n"+strings.Repeat("- ", depth)+"1\n"))
	}
	for _, width := range []int{nesting.Width - 1, nesting.Width + 1} {
		keys := make([]string, width)
		for i := range keys {
			keys[i] = fmt.Sprintf(`"k%06d":""`, i)
		}
		f.Add(cm, false, uint8(0), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wide"},"data":{`+strings.Join(keys, ",")+`}}`))
	}

	f.Fuzz(func(t *testing.T, resource uint8, update bool, contentType uint8, body []byte) {
		r := resources[int(resource)%len(resources)]
		method, path := http.MethodPost, r.collection
		if update && r.stored != "" {
			method, path = http.MethodPut, r.collection+"/"+r.stored
		}
		before := s.names(t, r.collection)
		req, err := http.NewRequest(method, s.host+path+"?dryRun=All", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", createContentTypes[int(contentType)%len(createContentTypes)])
		code, answer := send(t, s.admin, req)
		if code >= 500 {
			t.Fatalf("%s %s (%s, %d bytes %.200q): %d\n%.500s", method, path, req.Header.Get("Content-Type"), len(body), body, code, answer)
		}
		if after := s.names(t, r.collection); !slices.Equal(before, after) {
			t.Fatalf("%s %s?dryRun=All (%s, %.200q) answered %d and changed the collection from %v to %v", method, path, req.Header.Get("Content-Type"), body, code, before, after)
		}
	})
}

// request sends a JSON request as the admin, waits at most 10 s for the
// answer, and returns the status and the body.
func (s *fuzzServer) request(t testing.TB, method, path string, body []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.admin.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(answer)
}

// requestTargets are the collections FuzzRequest sends to, in the
// namespace the fuzzer picks.
var requestTargets = []string{
	"/api/v1/namespaces/%s/configmaps",
	"/api/v1/namespaces/%s/secrets",
	"/api/v1/namespaces/%s/serviceaccounts",
	"/api/v1/namespaces/%s/events",
	"/api/v1/namespaces/%s/resourcequotas",
	"/apis/events.k8s.io/v1/namespaces/%s/events",
	"/apis/coordination.k8s.io/v1/namespaces/%s/leases",
	"/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
	"/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
	"/apis/authorization.k8s.io/v1/namespaces/%s/localsubjectaccessreviews",
	"/apis/fuzz.example.com/v1/namespaces/%s/widgets",
}

// requestMethods are the methods FuzzRequest sends.
var requestMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// fuzzUser is who FuzzRequest sends as: the admin ClusterRole in
// namespace fuzz and nothing else, so no fuzzed request can register a
// webhook or an APIService that would then fail every request.
const fuzzUser = "fuzzer"

// FuzzRequest sends requests with fuzzed method, namespace, name (with
// subresources), query parameters, content type (patch types included)
// and body to the namespaced collections a namespace admin uses. A
// rejected request must leave its target as it was.
func FuzzRequest(f *testing.F) {
	s := startFuzzServer(f)
	ctx := context.Background()
	if _, err := s.Client.RbacV1().RoleBindings(fuzzNamespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: fuzzUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: fuzzUser}},
	}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps(fuzzNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	if _, err := s.Client.CoreV1().ServiceAccounts(fuzzNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
		f.Fatal(err)
	}
	user := fuzzHTTPClient(f, userConfig(f, s.Server, fuzzUser))

	const (
		get, post, put, patch, del = 0, 1, 2, 3, 4
		cm, secret, sa, widget     = 0, 1, 2, 10
		jsonType                   = "application/json"
		apply                      = "application/apply-patch+yaml"
		smp                        = "application/strategic-merge-patch+json"
		merge                      = "application/merge-patch+json"
		jsonPatch                  = "application/json-patch+json"
	)
	type seed struct {
		method             uint8
		ns                 string
		target             uint8
		name, query, ctype string
		body               string
	}
	seeds := []seed{
		{get, fuzzNamespace, cm, "target", "", "", ""},
		{get, fuzzNamespace, cm, "", "labelSelector=a+in+(&limit=-1&continue=x", "", ""},
		{get, fuzzNamespace, cm, "", "watch=true&resourceVersion=abc&timeoutSeconds=1", "", ""},
		{get, fuzzNamespace, cm, "", "fieldSelector=metadata.name%3Dtarget&resourceVersion=0&resourceVersionMatch=NotOlderThan", "", ""},
		{post, fuzzNamespace, cm, "", "fieldValidation=Strict&fieldManager=m", jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-"},"data":{"a":"b"},"unknown":1}`},
		{put, fuzzNamespace, cm, "target", "", jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","resourceVersion":"1"},"data":{"k":"w"}}`},
		{patch, fuzzNamespace, cm, "target", "fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\ndata: {k: 1}\n"},
		{patch, fuzzNamespace, cm, "target", "fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\nbogusTop: 1\n"},
		{patch, fuzzNamespace, cm, "target", "fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: [x]\n"},
		{patch, fuzzNamespace, cm, "target", "fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target, labels: [x]}\n"},
		{patch, fuzzNamespace, cm, "target", "", smp, `{"$patch":"bogus"}`},
		{patch, fuzzNamespace, cm, "target", "", smp, `{"$patch":"merge"}`},
		{patch, fuzzNamespace, cm, "target", "", smp, `{"metadata":{"$setElementOrder/finalizers":5}}`},
		{patch, fuzzNamespace, cm, "target", "", merge, `{"data":{"k":null},"metadata":{"finalizers":["a/b"]}}`},
		{patch, fuzzNamespace, cm, "target", "", jsonPatch, `[{"op":"test","path":"/data/k","value":"x"},{"op":"remove","path":"/data"}]`},
		{patch, fuzzNamespace, widget, "w", "fieldManager=t", apply, "apiVersion: fuzz.example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: x}\n"},
		{post, fuzzNamespace, widget, "", "", "application/vnd.kubernetes.protobuf", "k8s\x00\n\x0b\n\x02v1\x12\x05Widget\x12\x00"},
		{put, fuzzNamespace, widget, "w", "", "application/vnd.kubernetes.protobuf", "k8s\x00garbage"},
		{post, fuzzNamespace, widget, "", "", jsonType, `{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`},
		{get, ".", cm, "", "", "", ""},
		{del, "..", cm, "x", "", "", ""},
		{post, "%2e%2e", cm, "", "", jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`},
		{get, "default", secret, "", "", "", ""},
		{post, fuzzNamespace, sa, "target/token", "", jsonType, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600,"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"missing"}}}`},
		{del, fuzzNamespace, cm, "target", "dryRun=All&gracePeriodSeconds=-5&propagationPolicy=Bogus", jsonType, `{"preconditions":{"uid":"wrong"}}`},
		{del, fuzzNamespace, cm, "", "labelSelector=nope&dryRun=All", "", ""},
		{post, fuzzNamespace, cm, "", "", jsonType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 2<<20) + `"}}`},
	}
	for _, sd := range seeds {
		f.Add(sd.method, sd.ns, sd.target, sd.name, sd.query, sd.ctype, []byte(sd.body))
	}

	f.Fuzz(func(t *testing.T, method uint8, ns string, target uint8, name, query, contentType string, body []byte) {
		ns, name, query = escape(ns, "/?"), escape(name, "?"), escape(query, "")
		contentType = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return -1
			}
			return r
		}, contentType)
		collection := fmt.Sprintf(requestTargets[int(target)%len(requestTargets)], ns)
		path := collection
		if name != "" {
			path += "/" + name
		}
		m := requestMethods[int(method)%len(requestMethods)]
		// What is there before, when the request names an object or
		// collection in namespace fuzz, to see what a rejected request changed.
		watched := ""
		if ns == fuzzNamespace && !strings.Contains(name, "/") {
			watched = collection
		}
		var before []string
		if watched != "" {
			before = s.names(t, watched)
		}
		req, err := http.NewRequest(m, s.host, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// Opaque keeps the path exactly as made, escapes included.
		req.URL.Opaque, req.URL.RawQuery = "//"+req.URL.Host+path, query
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		code, answer := send(t, user, req)
		if code >= 500 {
			t.Fatalf("%s %s?%s (Content-Type %q, %.200q): %d\n%.500s", m, path, query, contentType, body, code, answer)
		}
		if code >= 400 && watched != "" {
			if after := s.names(t, watched); !slices.Equal(before, after) {
				t.Fatalf("%s %s?%s (%q, %.200q) was rejected with %d but changed the collection from %v to %v\n%.300s", m, path, query, contentType, body, code, before, after, answer)
			}
		}
	})
}

// escape percent-encodes what cannot go into a request line as it is
// (controls, spaces, non-ASCII, '#', a '%' that does not start an escape,
// and the bytes in also), so that every fuzzed string makes a request a
// client could send. (A malformed escape in an HTTP/2 :path is a
// malformed request: Go's HTTP/2 server resets the stream with
// PROTOCOL_ERROR, as RFC 9113 section 8.1.1 says; over HTTP/1.1 it
// answers 400. Neither reaches gcp's handlers.)
func escape(s, also string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' || c == '%' && !(i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])) || strings.IndexByte(also, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
