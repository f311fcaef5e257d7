package satoken

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/http"

	jose "github.com/go-jose/go-jose/v4"
)

// Paths of the OIDC discovery documents.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/openid/v1/jwks"
)

// DiscoveryHandlers returns the handlers of the OIDC discovery documents of
// issuer, so relying parties can verify service account tokens: the
// configuration (naming issuer+JWKSPath as the key set) and the public keys.
func DiscoveryHandlers(issuer string, keys []crypto.PublicKey) (map[string]http.Handler, error) {
	set := jose.JSONWebKeySet{}
	algs := map[string]bool{}
	for _, k := range keys {
		alg, err := algorithm(k)
		if err != nil {
			return nil, err
		}
		kid, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		algs[string(alg)] = true
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(alg), Use: "sig"})
	}
	var algList []string
	for _, a := range []string{"RS256", "ES256", "ES384", "ES512"} {
		if algs[a] {
			algList = append(algList, a)
		}
	}
	config, err := json.Marshal(map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              issuer + JWKSPath,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": algList,
	})
	if err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("service account keys: %w", err)
	}
	return map[string]http.Handler{
		OpenIDConfigurationPath: serve(config, "application/json"),
		JWKSPath:                serve(jwks, "application/jwk-set+json"),
	}, nil
}

func serve(body []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	})
}
