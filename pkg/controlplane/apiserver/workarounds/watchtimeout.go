package workarounds

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// WithWatchTimeoutCheck answers 400 for a watch whose timeoutSeconds is
// negative or, made a time.Duration, overflows: k8s.io/apiserver v0.37.2's
// handleWatch (pkg/endpoints/handlers/get.go) multiplies it into a
// time.Duration unchecked, so the watch is answered 200 and then ends at
// once with an InternalError event, or with an empty body. No upstream
// issue was found. test/integration TestWatchTimeoutSeconds holds it.
func WithWatchTimeoutCheck(next http.Handler, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := request.RequestInfoFrom(r.Context()); ok && info.IsResourceRequest && info.Verb == "watch" {
			if msg := badWatchTimeout(r.URL.Query()["timeoutSeconds"]); msg != "" {
				responsewriters.ErrorNegotiated(apierrors.NewBadRequest(msg), codecs, schema.GroupVersion{Version: "v1"}, w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// maxWatchTimeoutSeconds is the largest timeoutSeconds whose
// time.Duration does not overflow.
const maxWatchTimeoutSeconds = int64(math.MaxInt64 / time.Second)

// badWatchTimeout says what is wrong with a watch's timeoutSeconds values,
// or "" if nothing is. The handler reads only the first value, as
// int64 seconds made a time.Duration; 0 (or none) means the server's
// default.
func badWatchTimeout(values []string) string {
	if len(values) == 0 {
		return ""
	}
	n, err := strconv.ParseInt(values[0], 10, 64)
	if err == nil && n >= 0 && n <= maxWatchTimeoutSeconds {
		return ""
	}
	return fmt.Sprintf("timeoutSeconds: Invalid value: %q: must be a whole number of seconds from 0 (the server's default) to %d", values[0], maxWatchTimeoutSeconds)
}
