package apiserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	fakerest "k8s.io/client-go/rest/fake"
)

// readyzAnswering is a loopback client whose /readyz answers 200 once
// ready is set, 500 before.
func readyzAnswering(ready *atomic.Bool) *fakerest.RESTClient {
	return &fakerest.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: fakerest.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			status := http.StatusInternalServerError
			if req.URL.Path == "/readyz" && ready.Load() {
				status = http.StatusOK
			}
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
		}),
	}
}

// A started server is ready once /readyz answers 200, not before; Close
// stops it, and Err is then what serving returned.
func TestHandleReadyAndClose(t *testing.T) {
	var ready atomic.Bool
	stopped := errors.New("shutdown error")
	p := &PreparedServer{
		run:    func(ctx context.Context) error { <-ctx.Done(); return stopped },
		readyz: readyzAnswering(&ready),
	}
	h := p.Start(context.Background())
	select {
	case <-h.Ready():
		t.Fatal("ready before /readyz answered 200")
	case <-time.After(5 * readyPoll):
	}
	if err := h.Err(); err != nil {
		t.Fatalf("Err() while serving = %v, want nil", err)
	}
	ready.Store(true)
	select {
	case <-h.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not ready after /readyz answered 200")
	}
	if err := h.Close(); err != stopped {
		t.Fatalf("Close() = %v, want %v", err, stopped)
	}
	if err := h.Close(); err != stopped {
		t.Fatalf("second Close() = %v, want %v", err, stopped)
	}
	<-h.Done()
}

// A server that fails on its own is done, with why, and never ready.
func TestHandleFailure(t *testing.T) {
	var ready atomic.Bool
	failed := errors.New("listener closed")
	p := &PreparedServer{run: func(context.Context) error { return failed }, readyz: readyzAnswering(&ready)}
	h := p.Start(context.Background())
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not done after serving failed")
	}
	if err := h.Err(); err != failed {
		t.Fatalf("Err() = %v, want %v", err, failed)
	}
	ready.Store(true)
	select {
	case <-h.Ready():
		t.Fatal("a server that failed became ready")
	case <-time.After(5 * readyPoll):
	}
}
