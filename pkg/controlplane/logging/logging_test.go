package logging

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// recorder returns a logger at verbosity v whose lines land in lines.
func recorder(v int, lines *[]string) logr.Logger {
	return funcr.New(func(prefix, args string) { *lines = append(*lines, strings.TrimSpace(prefix+" "+args)) }, funcr.Options{Verbosity: v})
}

func TestUnknownFormatNamesTheFormats(t *testing.T) {
	c := NewOptions()
	c.Format = "xml"
	err := Apply(c)
	if err == nil || !strings.Contains(err.Error(), `"xml"`) || !strings.Contains(err.Error(), "text, json") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Apply(xml) = %v, want one line naming xml and the formats", err)
	}
}

// TestEtcdLevels: etcd's levels map to klog's error and verbosities 0, 2
// and 4; the first start's storage version error is never written; --log-level
// is a floor.
func TestEtcdLevels(t *testing.T) {
	missingTerm := errors.New("cannot detect storage schema version: missing term information")
	log := func(lg *zap.Logger) {
		lg.Debug("debug line")
		lg.Info("info line", zap.String("k", "v"))
		lg.Warn("warn line", zap.Error(errors.New("slow")))
		lg.Warn("apply request took too long", zap.Duration("took", 0))
		lg.Error("error line", zap.Error(errors.New("boom")), zap.Int("n", 1))
		lg.Error("failed to update storage version", zap.String("cluster-version", "3.7.0"), zap.Error(missingTerm))
		lg.Warn("Failed to detect schema version", zap.Error(errors.New("missing term information")))
		lg.Sugar().Infof("sugared %d", 1)
	}
	for _, tc := range []struct {
		v     int
		floor zapcore.Level
		want  []string
	}{
		{0, zapcore.DebugLevel, []string{`"msg"="warn line" "err"="slow"`, `"msg"="error line" "error"="boom" "n"=1`}},
		{2, zapcore.DebugLevel, []string{`"msg"="info line" "k"="v"`, `"msg"="warn line"`, `"msg"="apply request took too long"`, `"msg"="error line"`, `"msg"="sugared 1"`}},
		{4, zapcore.DebugLevel, []string{`"msg"="debug line"`, `"msg"="info line"`}},
		{4, zapcore.ErrorLevel, []string{`"msg"="error line"`}},
	} {
		t.Run(fmt.Sprintf("v=%d floor=%s", tc.v, tc.floor), func(t *testing.T) {
			var lines []string
			log(zap.New(ZapCore(recorder(tc.v, &lines), tc.floor)))
			all := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no %s in\n%s", w, all)
				}
			}
			for _, never := range []string{"storage version", "schema version", "stacktrace", "goroutine"} {
				if strings.Contains(all, never) {
					t.Errorf("%q written:\n%s", never, all)
				}
			}
			if tc.v == 0 && (strings.Contains(all, "info line") || strings.Contains(all, "took too long")) {
				t.Errorf("etcd's info or demoted lines at -v=0:\n%s", all)
			}
			if tc.floor == zapcore.ErrorLevel && len(lines) != 1 {
				t.Errorf("floor error wrote %d lines:\n%s", len(lines), all)
			}
		})
	}
}

// TestQuiet: upstream's start-up chatter is written only from -v=2, at
// verbosity 2; other lines, and errors, are untouched.
func TestQuiet(t *testing.T) {
	for _, v := range []int{0, 2} {
		var lines []string
		l := Quiet(recorder(v, &lines))
		l.Info("Waiting for caches to sync")
		l.Info("Adding GroupVersion apps v1 to ResourceManager")
		l.Info("Control plane is ready")
		l.Info("Waiting for the API server to be healthy", "status", 403, "err", "forbidden")
		l.Info("Waiting for the API server to be healthy", "status", 0, "err", "connection refused")
		l.Error(errors.New(`namespaces "kube-system" not found`), "Failed to ensure lease exists, will retry")
		l.Error(errors.New("etcd down"), "Failed to ensure lease exists, will retry")
		all := strings.Join(lines, "\n")
		if !strings.Contains(all, "Control plane is ready") || !strings.Contains(all, "etcd down") || !strings.Contains(all, "connection refused") {
			t.Errorf("-v=%d: a line that is not chatter is missing:\n%s", v, all)
		}
		chatter := strings.Contains(all, "Waiting for caches") || strings.Contains(all, "Adding GroupVersion") || strings.Contains(all, "kube-system") ||
			strings.Contains(all, "forbidden")
		if v == 0 && chatter {
			t.Errorf("-v=0 writes start-up chatter:\n%s", all)
		}
		if v == 2 && (!chatter || !strings.Contains(all, `"level"=2 "msg"="Waiting for caches to sync"`)) {
			t.Errorf("-v=2 does not write start-up chatter at verbosity 2:\n%s", all)
		}
	}
	for line, want := range map[string]bool{
		`I1127 17:03:42.022842   11536 handler.go:309] Adding GroupVersion  v1 to ResourceManager` + "\n":                                          true,
		`I1127 17:03:42.022842   11536 shared_informer.go:524] "Waiting for caches to sync"` + "\n":                                                true,
		`E1127 16:58:00.483706    2152 controller.go:208] "Failed to ensure lease exists, will retry" err="namespaces \"kube-system\" not found"`:  true,
		`E1127 16:58:00.483706    2152 controller.go:208] "Failed to ensure lease exists, will retry" err="etcd down"`:                             false,
		`I1127 17:03:42.022842   11536 start.go:56] "Control plane is starting"` + "\n":                                                            false,
		`I1127 16:58:00.014005    2152 plugins.go:157] Loaded 3 mutating admission controller(s) successfully in the following order: A,B.` + "\n": true,
		`I1127 16:58:00.014005    2152 x.go:1] Loaded something else` + "\n":                                                                       false,
		`I1127 16:58:00.504987    2152 manager.go:129] "Waiting for the API server to be healthy" status=403 err="forbidden"` + "\n":               true,
		`I1127 16:58:00.504987    2152 manager.go:129] "Waiting for the API server to be healthy" status=0 err="connection refused"` + "\n":        false,
	} {
		if got := isNoisy(klogLineMessage([]byte(line))); got != want {
			t.Errorf("isNoisy(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestWithoutHarmlessOnJSON: etcd's own JSON log (the test server's) drops
// the first start's harmless schema-version error too, and keeps the rest.
func TestWithoutHarmlessOnJSON(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	core := WithoutHarmless(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zapcore.WarnLevel))
	lg := zap.New(core).With(zap.String("member", "m"))
	lg.Error("failed to update storage version", zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	lg.Warn("Failed to detect schema version", zap.Error(errors.New("missing term information")))
	lg.Warn("something else")
	lg.Info("below the level")
	if got := out.String(); strings.Contains(got, "schema version") || !strings.Contains(got, "something else") || strings.Contains(got, "below the level") {
		t.Fatalf("etcd's JSON log:\n%s", got)
	}
}
