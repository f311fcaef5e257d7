package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/test/poll"
)

// certsRequestPEM returns a PEM certificate request for commonName in orgs,
// signed by a fresh key.
func certsRequestPEM(t *testing.T, commonName string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: commonName, Organization: orgs},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// certsSelfSignedPEM returns a PEM self-signed certificate, a CA when isCA.
func certsSelfSignedPEM(t *testing.T, commonName string, isCA bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  isCA,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// certsCSR returns a kube-apiserver-client request named name.
func certsCSR(t *testing.T, name string, request []byte) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](3600),
		},
	}
}

// certsInvalid asserts err is a 422 with a cause on field.
func certsInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("422 without details: %v", err)
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return
		}
	}
	t.Fatalf("422 has no cause on %s: %v", field, err)
}

// certsTable fetches path as a Table and returns its column names and
// the cells of its rows.
func certsTable(t *testing.T, c kubernetes.Interface, path string) ([]string, [][]interface{}) {
	t.Helper()
	raw, err := c.CertificatesV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	var rows [][]interface{}
	for _, r := range table.Rows {
		rows = append(rows, r.Cells)
	}
	return columns, rows
}

func certsApprove(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test",
	})
	return csr
}

// TestCertificatesCSR exercises the registry of certificatesigningrequests
// and its subresources as the admin; it needs no admission plugin.
func TestCertificatesCSR(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	csrs := s.Client.CertificatesV1().CertificateSigningRequests()

	me, err := s.Client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin := me.Status.UserInfo

	spoofed := certsCSR(t, "csr-one", certsRequestPEM(t, "one"))
	spoofed.Spec.Username = "mallory"
	spoofed.Spec.Groups = []string{"system:masters-not"}
	spoofed.Status.Certificate = certsSelfSignedPEM(t, "pre-issued", false)
	csr, err := csrs.Create(ctx, spoofed, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != admin.Username || strings.Join(csr.Spec.Groups, ",") != strings.Join(admin.Groups, ",") {
		t.Fatalf("requestor %q %v, want the admin %q %v", csr.Spec.Username, csr.Spec.Groups, admin.Username, admin.Groups)
	}
	if len(csr.Status.Certificate) != 0 {
		t.Fatal("create kept a client-supplied status.certificate")
	}

	t.Run("invalid requests are 422", func(t *testing.T) {
		bad := certsCSR(t, "csr-bad-pem", []byte("not a pem"))
		_, err := csrs.Create(ctx, bad, metav1.CreateOptions{})
		certsInvalid(t, err, "spec.request")
		if !strings.Contains(err.Error(), "PEM block type must be CERTIFICATE REQUEST") {
			t.Fatalf("message: %v", err)
		}

		short := certsCSR(t, "csr-short", certsRequestPEM(t, "short"))
		short.Spec.ExpirationSeconds = ptr.To[int32](60)
		_, err = csrs.Create(ctx, short, metav1.CreateOptions{})
		certsInvalid(t, err, "spec.expirationSeconds")

		noSigner := certsCSR(t, "csr-no-signer", certsRequestPEM(t, "x"))
		noSigner.Spec.SignerName = ""
		_, err = csrs.Create(ctx, noSigner, metav1.CreateOptions{})
		certsInvalid(t, err, "spec.signerName")

		dup := certsCSR(t, "csr-dup-usage", certsRequestPEM(t, "x"))
		dup.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "client auth", "bogus"}
		_, err = csrs.Create(ctx, dup, metav1.CreateOptions{})
		certsInvalid(t, err, "spec.usages[1]")
		certsInvalid(t, err, "spec.usages[2]")
	})

	t.Run("main resource keeps spec and status", func(t *testing.T) {
		changed := csr.DeepCopy()
		changed.Spec.SignerName = "example.com/other"
		changed.Labels = map[string]string{"touched": "yes"}
		changed = certsApprove(changed)
		got, err := csrs.Update(ctx, changed, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || len(got.Status.Conditions) != 0 || got.Labels["touched"] != "yes" {
			t.Fatalf("update changed spec or status, or dropped metadata: %+v", got)
		}
		csr = got
	})

	t.Run("status cannot approve", func(t *testing.T) {
		_, err := csrs.UpdateStatus(ctx, certsApprove(csr), metav1.UpdateOptions{})
		certsInvalid(t, err, "status.conditions")
		if !strings.Contains(err.Error(), `updates may not add a condition of type "Approved"`) {
			t.Fatalf("message: %v", err)
		}
	})

	t.Run("approval", func(t *testing.T) {
		withCert := certsApprove(csr)
		withCert.Status.Certificate = certsSelfSignedPEM(t, "sneaked", false)
		got, err := csrs.UpdateApproval(ctx, csr.Name, withCert, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
			t.Fatalf("conditions after approval: %+v", got.Status.Conditions)
		}
		if got.Status.Conditions[0].LastUpdateTime.IsZero() || got.Status.Conditions[0].LastTransitionTime.IsZero() {
			t.Fatalf("approval did not stamp condition times: %+v", got.Status.Conditions[0])
		}
		if len(got.Status.Certificate) != 0 {
			t.Fatal("approval set status.certificate")
		}
		csr = got

		denied := csr.DeepCopy()
		denied.Status.Conditions = append(denied.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue,
		})
		_, err = csrs.UpdateApproval(ctx, csr.Name, denied, metav1.UpdateOptions{})
		certsInvalid(t, err, "status.conditions")
	})

	t.Run("status sets the certificate once", func(t *testing.T) {
		bad := csr.DeepCopy()
		bad.Status.Certificate = []byte("-----BEGIN GARBAGE-----\nAAAA\n-----END GARBAGE-----\n")
		_, err := csrs.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
		certsInvalid(t, err, "status.certificate")

		issued := csr.DeepCopy()
		issued.Status.Certificate = certsSelfSignedPEM(t, "one", false)
		got, err := csrs.UpdateStatus(ctx, issued, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Status.Certificate) != string(issued.Status.Certificate) {
			t.Fatal("status.certificate not stored")
		}
		csr = got

		again := csr.DeepCopy()
		again.Status.Certificate = certsSelfSignedPEM(t, "two", false)
		_, err = csrs.UpdateStatus(ctx, again, metav1.UpdateOptions{})
		certsInvalid(t, err, "status.certificate")
	})

	t.Run("server-side apply", func(t *testing.T) {
		applied := map[string]interface{}{
			"apiVersion": "certificates.k8s.io/v1",
			"kind":       "CertificateSigningRequest",
			"metadata":   map[string]interface{}{"name": "csr-applied"},
			"spec": map[string]interface{}{
				"request":    certsRequestPEM(t, "applied"),
				"signerName": "example.com/applied",
				"usages":     []string{"client auth"},
			},
		}
		body, err := json.Marshal(applied)
		if err != nil {
			t.Fatal(err)
		}
		got, err := csrs.Patch(ctx, "csr-applied", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "certs-test"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Username != admin.Username {
			t.Fatalf("applied request's username %q", got.Spec.Username)
		}
		approval, err := json.Marshal(map[string]interface{}{
			"apiVersion": "certificates.k8s.io/v1",
			"kind":       "CertificateSigningRequest",
			"metadata":   map[string]interface{}{"name": "csr-applied"},
			"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
				"type": "Denied", "status": "True", "reason": "Applied",
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err = csrs.Patch(ctx, "csr-applied", types.ApplyPatchType, approval, metav1.PatchOptions{FieldManager: "certs-approver"}, "approval")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != certificatesv1.CertificateDenied {
			t.Fatalf("conditions after applying approval: %+v", got.Status.Conditions)
		}
	})

	t.Run("table and field selector", func(t *testing.T) {
		other := certsCSR(t, "csr-other-signer", certsRequestPEM(t, "other"))
		other.Spec.SignerName = "example.com/custom"
		other.Spec.ExpirationSeconds = nil
		if _, err := csrs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/custom"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "csr-other-signer" {
			t.Fatalf("field selector listed %d items", len(list.Items))
		}
		if _, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.username=x"}); !apierrors.IsBadRequest(err) {
			t.Fatalf("unsupported field label: want 400, got %v", err)
		}

		columns, rows := certsTable(t, s.Client, "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-one")
		if got := strings.Join(columns, ","); got != "Name,Age,SignerName,Requestor,RequestedDuration,Condition" {
			t.Fatalf("columns %s", got)
		}
		row := rows[0]
		if row[0] != "csr-one" || row[2] != certificatesv1.KubeAPIServerClientSignerName || row[3] != admin.Username || row[4] != "60m" || row[5] != "Approved,Issued" {
			t.Fatalf("row %v", row)
		}
		_, rows = certsTable(t, s.Client, "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-other-signer")
		if rows[0][4] != "<none>" || rows[0][5] != "Pending" {
			t.Fatalf("row %v", rows[0])
		}
	})
}

// TestCertificatesClusterTrustBundle exercises the registry of
// clustertrustbundles as the admin; it needs no admission plugin.
func TestCertificatesClusterTrustBundle(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	bundles := s.Client.CertificatesV1().ClusterTrustBundles()
	ca := string(certsSelfSignedPEM(t, "test-ca", true))

	good := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:bundle"},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: ca},
	}
	created, err := bundles.Create(ctx, good, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unsigned := &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec:       certificatesv1.ClusterTrustBundleSpec{TrustBundle: ca},
	}
	if _, err := bundles.Create(ctx, unsigned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	badPEM := unsigned.DeepCopy()
	badPEM.Name = "bad-pem"
	badPEM.Spec.TrustBundle = "-----BEGIN CERTIFICATE-----\nnotbase64!\n-----END CERTIFICATE-----\n"
	_, err = bundles.Create(ctx, badPEM, metav1.CreateOptions{})
	certsInvalid(t, err, "spec.trustBundle")

	leaf := unsigned.DeepCopy()
	leaf.Name = "leaf"
	leaf.Spec.TrustBundle = string(certsSelfSignedPEM(t, "leaf", false))
	_, err = bundles.Create(ctx, leaf, metav1.CreateOptions{})
	certsInvalid(t, err, "spec.trustBundle")

	badName := good.DeepCopy()
	badName.Name = "wrong-prefix"
	_, err = bundles.Create(ctx, badName, metav1.CreateOptions{})
	certsInvalid(t, err, "metadata.name")

	moved := created.DeepCopy()
	moved.Spec.SignerName = "example.com/other"
	_, err = bundles.Update(ctx, moved, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing signerName: want 422, got %v", err)
	}

	list, err := bundles.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/signer"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != good.Name {
		t.Fatalf("field selector listed %d items", len(list.Items))
	}

	columns, rows := certsTable(t, s.Client, "/apis/certificates.k8s.io/v1/clustertrustbundles")
	if got := strings.Join(columns, ","); got != "Name,SignerName" {
		t.Fatalf("columns %s", got)
	}
	cells := map[interface{}]interface{}{}
	for _, r := range rows {
		cells[r[0]] = r[1]
	}
	if cells[good.Name] != "example.com/signer" || cells["plain"] != "<none>" {
		t.Fatalf("rows %v", rows)
	}
}

// TestCertificatesAdmission checks the CertificateApproval,
// CertificateSigning, ClusterTrustBundleAttest and
// CertificateSubjectRestriction admission plugins through the server.
// It passes only once those plugins are part of the server's admission
// chain (pkg/controlplane/admission's ordered list wired into the
// apiserver's admission options). Each non-admin user is granted the RBAC
// permission on the resource itself, so a 403 here can only come from the
// plugin, whose message the test checks.
func TestCertificatesAdmission(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	csrs := s.Client.CertificatesV1().CertificateSigningRequests()

	createClusterRole(t, s.Client, "certs-csr-writer", rbacv1.PolicyRule{
		APIGroups: []string{"certificates.k8s.io"},
		Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"},
		Verbs:     []string{"get", "list", "create", "update"},
	}, rbacv1.PolicyRule{
		APIGroups: []string{"certificates.k8s.io"},
		Resources: []string{"clustertrustbundles"},
		Verbs:     []string{"get", "list", "create", "update"},
	})
	createClusterRoleBinding(t, s.Client, "certs-csr-writer", "certs-csr-writer", userSubject("certs-user"))
	user := userClient(t, s, "certs-user")
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "certs-user can create CSRs", func() bool {
		return canI(t, user, "create", "certificatesigningrequests.certificates.k8s.io", "")
	})

	t.Run("CertificateSubjectRestriction", func(t *testing.T) {
		masters := certsCSR(t, "csr-masters", certsRequestPEM(t, "evil", "system:masters"))
		_, err := csrs.Create(ctx, masters, metav1.CreateOptions{})
		forbidden(t, err, "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed")

		other := certsCSR(t, "csr-masters-other-signer", certsRequestPEM(t, "ok", "system:masters"))
		other.Spec.SignerName = "example.com/custom"
		if _, err := csrs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	csr, err := user.CertificatesV1().CertificateSigningRequests().Create(ctx, certsCSR(t, "csr-by-user", certsRequestPEM(t, "certs-user")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != "certs-user" {
		t.Fatalf("spec.username %q, want certs-user", csr.Spec.Username)
	}

	t.Run("CertificateApproval", func(t *testing.T) {
		_, err := user.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, certsApprove(csr), metav1.UpdateOptions{})
		forbidden(t, err, `user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`)

		createClusterRole(t, s.Client, "certs-approver", rbacv1.PolicyRule{
			APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
			ResourceNames: []string{"kubernetes.io/*"}, Verbs: []string{"approve"},
		})
		createClusterRoleBinding(t, s.Client, "certs-approver", "certs-approver", userSubject("certs-user"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "certs-user can approve", func() bool {
			got, err := user.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, certsApprove(csr), metav1.UpdateOptions{})
			if err == nil {
				csr = got
			}
			return err == nil
		})
	})

	t.Run("CertificateSigning", func(t *testing.T) {
		latest, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		issued := latest.DeepCopy()
		issued.Status.Certificate = certsSelfSignedPEM(t, "certs-user", false)
		_, err = user.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issued, metav1.UpdateOptions{})
		forbidden(t, err, `user not permitted to sign requests with signerName "kubernetes.io/kube-apiserver-client"`)

		createClusterRole(t, s.Client, "certs-signer", rbacv1.PolicyRule{
			APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
			ResourceNames: []string{certificatesv1.KubeAPIServerClientSignerName}, Verbs: []string{"sign"},
		})
		createClusterRoleBinding(t, s.Client, "certs-signer", "certs-signer", userSubject("certs-user"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "certs-user can sign", func() bool {
			_, err := user.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issued, metav1.UpdateOptions{})
			return err == nil
		})
	})

	t.Run("ClusterTrustBundleAttest", func(t *testing.T) {
		bundle := &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "example.com:attested:one"},
			Spec: certificatesv1.ClusterTrustBundleSpec{
				SignerName:  "example.com/attested",
				TrustBundle: string(certsSelfSignedPEM(t, "attested-ca", true)),
			},
		}
		_, err := user.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{})
		forbidden(t, err, `user not permitted to attest for signerName "example.com/attested"`)

		plain := &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: "no-signer"},
			Spec:       certificatesv1.ClusterTrustBundleSpec{TrustBundle: bundle.Spec.TrustBundle},
		}
		if _, err := user.CertificatesV1().ClusterTrustBundles().Create(ctx, plain, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a bundle without signerName needs no attest permission: %v", err)
		}

		createClusterRole(t, s.Client, "certs-attester", rbacv1.PolicyRule{
			APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
			ResourceNames: []string{"example.com/attested"}, Verbs: []string{"attest"},
		})
		createClusterRoleBinding(t, s.Client, "certs-attester", "certs-attester", userSubject("certs-user"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "certs-user can attest", func() bool {
			_, err := user.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{})
			return err == nil
		})
	})
}
