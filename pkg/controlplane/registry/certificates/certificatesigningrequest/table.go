package certificatesigningrequest

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// TableConvertor prints NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION
// CONDITION, as kubectl shows requests.
func TableConvertor() table.Convertor {
	spec := certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		table.AgeColumn(),
		{Name: "SignerName", Type: "string", Description: spec["signerName"]},
		{Name: "Requestor", Type: "string", Description: spec["request"]},
		{Name: "RequestedDuration", Type: "string", Description: spec["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
	}, func(obj runtime.Object) ([]interface{}, error) {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		signer := "<none>"
		if csr.Spec.SignerName != "" {
			signer = csr.Spec.SignerName
		}
		requested := "<none>"
		if csr.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
		}
		return []interface{}{csr.Name, table.Age(csr.CreationTimestamp), signer, csr.Spec.Username, requested, Condition(csr)}, nil
	})
}

// Condition summarises a request's state as kubectl does: Denied,
// Approved or Pending (in that precedence), then ",Failed" and ",Issued"
// when they apply.
func Condition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
