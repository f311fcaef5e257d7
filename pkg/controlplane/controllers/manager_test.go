package controllers

import (
	"context"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestRunStopsCleanlyBeforeTheServerAnswers: a manager stopped while it
// still waits for its API server (gcp start stopped right after it
// started) returns no error.
func TestRunStopsCleanlyBeforeTheServerAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := Run(ctx, &Config{Kubeconfig: &rest.Config{Host: "https://" + addr}}); err != nil {
		t.Fatalf("Run after a stop: %v, want nil", err)
	}
}
