// Package pki is `gcp pki`: it makes, checks and renews the certificates,
// keys and kubeconfigs of a control plane whose parts run apart, as
// `kubeadm init phase certs`, `kubeadm certs check-expiration` and
// `kubeadm certs renew` do.
package pki

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// DefaultDir is where `gcp pki` keeps the PKI unless --dir says otherwise:
// the same directory `gcp start` uses in its default data dir.
const DefaultDir = allinone.DefaultDataDir + "/pki"

// DefaultServer is the API server URL written into the kubeconfigs unless
// --server says otherwise.
const DefaultServer = "https://127.0.0.1:6443"

// DefaultEtcdMember is the etcd member certificates are made for unless
// --etcd-member says otherwise: `gcp etcd`'s default --name, on loopback.
const DefaultEtcdMember = "gcp=localhost"

// NewCommand returns `pki` with its subcommands init, check and renew.
// name is the product's, as main's root command is called.
func NewCommand(name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pki",
		Short: "Make, check and renew the certificates of a control plane run as separate parts",
		Long: "Make, check and renew the certificates, keys and kubeconfigs that " + name + " etcd, " + name + " apiserver and " + name + " controllers " +
			"need when they run apart: a cluster CA, a separate etcd CA, a front-proxy CA, each etcd member's server and peer " +
			"certificates, the API server's serving and etcd client certificates, the service account key pair, and kubeconfigs " +
			"for the admin and the controllers. Keys are 0600 and directories 0700.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newInitCommand(name), newCheckCommand(name), newRenewCommand(name))
	return cmd
}

// dirs are the flags every subcommand takes.
type dirs struct {
	dir, kubeconfigDir string
	// name is the product's, for messages.
	name string
}

func (d *dirs) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.dir, "dir", DefaultDir, "Directory of the certificates and keys.")
	cmd.Flags().StringVar(&d.kubeconfigDir, "kubeconfig-dir", "",
		"Directory of admin.kubeconfig and controllers.kubeconfig; defaults to the parent of --dir, as kubeadm keeps admin.conf beside pki/.")
}

func (d *dirs) kubeconfigs() string {
	if d.kubeconfigDir != "" {
		return d.kubeconfigDir
	}
	return filepath.Dir(filepath.Clean(d.dir))
}

func newInitCommand(name string) *cobra.Command {
	var (
		d          = dirs{name: name}
		server     string
		sans       []string
		memberArgs []string
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the CAs, certificates, keys and kubeconfigs that are missing",
		Long: "Create in --dir whatever is missing: the cluster, etcd and front-proxy CAs, the service account key pair, " +
			"the API server's serving certificate (localhost, 127.0.0.1, ::1, the host name and --apiserver-san), the admin, " +
			"controllers, front-proxy and etcd client certificates, a server and a peer certificate per --etcd-member in etcd/<name>/, " +
			"and admin.kubeconfig and controllers.kubeconfig pointing at --server. Running it again keeps every key and CA, " +
			"adds what is missing and re-issues a certificate that lacks a requested name, for the key it has; " +
			"the kubeconfigs keep their server unless --server is given, which rewrites them for it.",
		Example: "  " + name + " pki init --dir /etc/" + name + "/pki --server https://lb.example.com:6443 --apiserver-san lb.example.com \\\n" +
			"    --etcd-member etcd-0=10.0.0.10 --etcd-member etcd-1=10.0.0.11 --etcd-member etcd-2=10.0.0.12",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkServer(server); err != nil {
				return err
			}
			if len(memberArgs) == 0 {
				memberArgs = []string{DefaultEtcdMember}
			}
			var members []pki.EtcdMember
			for _, a := range memberArgs {
				m, err := pki.ParseEtcdMember(a)
				if err != nil {
					return fmt.Errorf("--etcd-member: %w", err)
				}
				members = append(members, m)
			}
			// Ensure checks the rest (SANs, duplicate members) before it
			// creates anything.
			files, err := pki.Ensure(pki.Options{Dir: d.dir, ServingSANs: sans, EtcdMembers: members})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := os.MkdirAll(d.kubeconfigs(), 0o700); err != nil {
				return err
			}
			// A kubeconfig that exists is kept, unless --server is given
			// and names another URL: then it is rewritten for that URL,
			// with the certificate it has.
			serverGiven := cmd.Flags().Changed("server")
			for _, k := range files.Kubeconfigs(d.kubeconfigs()) {
				switch _, err := os.Stat(k.Path); {
				case err == nil:
					old, err := pki.KubeconfigServer(k.Path)
					if err != nil {
						return err
					}
					if !serverGiven || old == server {
						fmt.Fprintf(out, "kept %s for %s\n", k.Path, old)
						continue
					}
					if err := pki.WriteKubeconfig(k.Path, server, files.CACert, k.CertFile, k.KeyFile, "gcp"); err != nil {
						return err
					}
					fmt.Fprintf(out, "rewrote %s for %s (was %s)\n", k.Path, server, old)
					continue
				case !errors.Is(err, os.ErrNotExist):
					return err
				}
				if err := pki.WriteKubeconfig(k.Path, server, files.CACert, k.CertFile, k.KeyFile, "gcp"); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s for %s\n", k.Path, server)
			}
			fmt.Fprintln(out)
			_, err = printCheck(out, d, time.Now())
			return err
		},
	}
	d.addFlags(cmd)
	cmd.Flags().StringVar(&server, "server", DefaultServer, "API server URL the kubeconfigs point at: a load balancer in front of the API servers, or one of them.")
	cmd.Flags().StringSliceVar(&sans, "apiserver-san", nil,
		"Extra DNS names or IP addresses for the API server's serving certificate: every API server's address and the load balancer's. Comma-separated or repeated.")
	cmd.Flags().StringArrayVar(&memberArgs, "etcd-member", nil,
		"An etcd member as name=host[,host...] (its --name, and the DNS names or IP addresses others reach it by; localhost and loopback are always included). "+
			"Repeat for each member. Defaults to "+DefaultEtcdMember+".")
	return cmd
}

func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" && u.Path != "/" {
		return fmt.Errorf("--server %q: want https://host:port", server)
	}
	return nil
}

func newCheckCommand(name string) *cobra.Command {
	d := dirs{name: name}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "List every certificate with its expiry; exit 1 if one is expired or invalid",
		Long: "List every CA, certificate and kubeconfig client certificate in --dir and --kubeconfig-dir with its expiry, " +
			"its CA and what is wrong with it (expired, not signed by its CA, key not matching). Exits 1 when anything is wrong. " +
			"Certificates within 30 days of expiry are marked; renew them with " + name + " pki renew.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bad, err := printCheck(cmd.OutOrStdout(), d, time.Now())
			if err != nil {
				return err
			}
			if bad > 0 {
				return fmt.Errorf("%d certificate(s) in %s need attention", bad, d.dir)
			}
			return nil
		},
	}
	d.addFlags(cmd)
	return cmd
}

// renewSoon is when check starts marking a certificate as due.
const renewSoon = 30 * 24 * time.Hour

// printCheck writes the table of certificates and returns how many have a
// problem.
func printCheck(out io.Writer, d dirs, now time.Time) (int, error) {
	if _, err := os.Stat(d.dir); err != nil {
		return 0, fmt.Errorf("no PKI in %s: %w; create one with %s pki init", d.dir, err, d.name)
	}
	statuses, err := pki.Inspect(d.dir, now)
	if err != nil {
		return 0, err
	}
	for _, k := range pki.FilesIn(d.dir).Kubeconfigs(d.kubeconfigs()) {
		if _, err := os.Stat(k.Path); err == nil {
			st := pki.InspectKubeconfig(k.Path, now)
			st.Name = filepath.Base(k.Path)
			statuses = append(statuses, st)
		}
	}
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tCERTIFICATE AUTHORITY\tSTATUS")
	bad := 0
	for _, st := range statuses {
		expires, residual := "-", "-"
		if !st.NotAfter.IsZero() {
			expires = st.NotAfter.UTC().Format("Jan 02, 2006 15:04 MST")
			if left := st.NotAfter.Sub(now); left > 0 {
				residual = duration.ShortHumanDuration(left)
			} else {
				residual = "expired"
			}
		}
		status := "ok"
		switch {
		case st.Problem != "":
			status = strings.ReplaceAll(st.Problem, "\n", " ")
			bad++
		case st.NotAfter.Sub(now) < renewSoon:
			status = "renew soon"
		}
		authority := st.Authority
		if authority == "" {
			authority = "(CA)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", st.Name, expires, residual, authority, status)
	}
	return bad, w.Flush()
}

func newRenewCommand(name string) *cobra.Command {
	d := dirs{name: name}
	cmd := &cobra.Command{
		Use:   "renew [all | NAME...]",
		Short: "Re-issue leaf certificates for another year, keeping the CAs and keys",
		Long: "Re-issue the leaf certificates in --dir (all of them, or those named as " + name + " pki check lists them) for the keys " +
			"they have, with the same names and another year of validity, and rewrite the kubeconfigs in --kubeconfig-dir " +
			"with the renewed client certificates, keeping their server. CAs are never renewed here. Copy renewed files to " +
			"the machines that use them and restart the processes that read them at start (" + name + " controllers, and " + name + " apiserver " +
			"for its etcd client certificate; " + name + " etcd and " + name + " apiserver's serving certificate are reloaded by themselves).",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "all" {
				args = nil
			}
			if _, err := os.Stat(d.dir); err != nil {
				return fmt.Errorf("no PKI in %s: %w; create one with %s pki init", d.dir, err, d.name)
			}
			renewed, skipped, err := pki.Renew(d.dir, args, time.Now())
			out := cmd.OutOrStdout()
			for _, name := range renewed {
				fmt.Fprintf(out, "renewed %s\n", name)
			}
			for _, s := range skipped {
				fmt.Fprintf(out, "skipped %s: %s\n", s.Name, s.Why)
			}
			if err != nil {
				return err
			}
			files := pki.FilesIn(d.dir)
			for _, k := range files.Kubeconfigs(d.kubeconfigs()) {
				if _, err := os.Stat(k.Path); err != nil {
					continue
				}
				server, err := pki.KubeconfigServer(k.Path)
				if err != nil {
					return err
				}
				if err := pki.WriteKubeconfig(k.Path, server, files.CACert, k.CertFile, k.KeyFile, "gcp"); err != nil {
					return err
				}
				fmt.Fprintf(out, "rewrote %s\n", k.Path)
			}
			return nil
		},
	}
	d.addFlags(cmd)
	return cmd
}
