// Package tlspolicy is the TLS every gcp server offers by default: TLS 1.2
// or later, and for TLS 1.2 only ECDHE key exchange with AEAD ciphers (the
// list CIS Kubernetes Benchmark 1.2.29 accepts; no CBC or SHA-1 suites).
// TLS 1.3, whose suites are all AEAD, is always on. --tls-cipher-suites
// and --tls-min-version change them, as on kube-apiserver.
package tlspolicy

import (
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// MinVersion is the lowest TLS version served by default.
const MinVersion = "VersionTLS12"

// CipherSuites returns the TLS 1.2 cipher suites served by default, by
// the names --tls-cipher-suites takes.
func CipherSuites() []string {
	return []string{
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	}
}

// Apply makes the policy the defaults of o; call it before o's flags are
// added, so that the flags show and override them.
func Apply(o *genericoptions.SecureServingOptions) {
	o.CipherSuites = CipherSuites()
	o.MinTLSVersion = MinVersion
}
