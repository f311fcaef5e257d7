// Package logging is how gcp's server commands log: component-base's
// logging configuration (--logging-format text or json, -v, --vmodule),
// named and applied as kube-apiserver does; a filter that moves upstream's
// start-up chatter below the default verbosity; and a zap core that sends
// the embedded etcd's log through klog, so that one process writes one
// format.
package logging

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The JSON format, as kube-apiserver registers it.
	_ "k8s.io/component-base/logs/json/register"
)

// Formats are the values --logging-format takes.
var Formats = []string{logsapi.DefaultLogFormat, logsapi.JSONLogFormat}

// NewOptions returns the logging defaults: text, verbosity 0.
func NewOptions() *logsapi.LoggingConfiguration { return logsapi.NewLoggingConfiguration() }

// AddFlags adds c's flags (--logging-format, -v, --vmodule and
// --log-flush-frequency) to fss's "logs" section, with kube-apiserver's
// names and help. kube-apiserver's alpha stream options
// (--log-*-split-stream, --log-*-info-buffer-size) are left out: they need
// the LoggingAlphaOptions feature gate, which gcp's commands do not offer.
func AddFlags(c *logsapi.LoggingConfiguration, fss *cliflag.NamedFlagSets) {
	all := pflag.NewFlagSet("logs", pflag.ContinueOnError)
	logsapi.AddFlags(c, all)
	to := fss.FlagSet("logs")
	all.VisitAll(func(f *pflag.Flag) {
		if !strings.HasSuffix(f.Name, "-split-stream") && !strings.HasSuffix(f.Name, "-info-buffer-size") {
			to.AddFlag(f)
		}
	})
}

// Apply checks c and makes it the process's logging, once per process,
// as early in a command as possible: klog's output, and so the API
// server's, the controllers' and the embedded etcd's, takes c's format and
// verbosity. An unknown format is one error naming the formats. The
// logger is then wrapped by the start-up filter (see Quiet).
func Apply(c *logsapi.LoggingConfiguration) error {
	if !slices.Contains(Formats, c.Format) {
		return fmt.Errorf("--logging-format %q is not one of: %s", c.Format, strings.Join(Formats, ", "))
	}
	// No feature gate: the JSON format is beta (on); the alpha options
	// stay off, as in kube-apiserver by default. A program that runs
	// several commands in turn (tests) applies the same configuration
	// again; only a different one is an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if err := logsapi.ValidateAndApply(c, nil); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	installQuiet()
	return nil
}
