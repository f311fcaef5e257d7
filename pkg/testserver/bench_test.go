package testserver

import (
	"context"
	"testing"

	"github.com/gcp-project/gcp/pkg/layering"
)

// BenchmarkStart starts a server until /readyz is 200 and stops it, once
// per iteration: what a test pays for its own server.
//
//	go test ./pkg/testserver -run '^$' -bench Start -benchtime 10x
func BenchmarkStart(b *testing.B) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"generic", Options{}},
		{"generic-with-controllers", Options{Controllers: []string{"*"}}},
		{"core-rbac-crds", Options{Stack: layering.Generic().Without(layering.Coordination, layering.FlowControl, layering.AdmissionRegistration,
			layering.Certificates, layering.APIServerInternal, layering.Aggregation, layering.Events)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				s, err := Run(context.Background(), c.o)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Stop(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
