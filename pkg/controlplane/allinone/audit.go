package allinone

import (
	"fmt"
	"os"
	"path/filepath"
)

// AuditPolicyName is the audit policy `gcp start --audit-log-path` writes
// into the data dir the first time, and uses from then on (edit it to
// log more or less).
const AuditPolicyName = "audit-policy.yaml"

// defaultAuditPolicy logs who did what to which object: request and
// response bodies for changes, only metadata for reads and for anything
// that may hold a secret, nothing for health checks and for the control
// plane renewing its own Leases.
const defaultAuditPolicy = `# Written by gcp start --audit-log-path; edit it to log more or less.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
- level: None
  users: ["system:apiserver", "system:gcp-controllers", "system:kube-controller-manager"]
  verbs: ["get", "update"]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  resources:
  - {group: "", resources: [secrets, configmaps, serviceaccounts/token]}
  - {group: authentication.k8s.io, resources: [tokenreviews]}
- level: RequestResponse
  verbs: [create, update, patch, delete, deletecollection]
- level: Metadata
`

// ensureAuditPolicy returns the data dir's audit policy, writing the
// default (0600) when there is none.
func ensureAuditPolicy(dataDir string) (string, error) {
	path := filepath.Join(dataDir, AuditPolicyName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if os.IsExist(err) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("audit policy: %w", err)
	}
	if _, err := f.WriteString(defaultAuditPolicy); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return "", fmt.Errorf("audit policy: %w", err)
	}
	return path, f.Close()
}
