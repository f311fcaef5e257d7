package manifests

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// systemdOptions are the flags of `gcp manifests systemd`.
type systemdOptions struct {
	binary, user, group string
}

// write prints a unit that runs the role as a notify service: gcp sends
// READY=1 when the role is ready (etcd has joined, the API server's
// /readyz is 200, the controllers serve), so units ordered after it start
// once it can serve them. The sandbox leaves the role nothing but reading
// the system and writing its own directories.
func (o *systemdOptions) write(w io.Writer, s spec) error {
	if !filepath.IsAbs(o.binary) {
		return fmt.Errorf("--binary=%s: a unit needs the absolute path of %s", o.binary, s.product)
	}
	if o.user == "" || o.user == "root" {
		return fmt.Errorf("--user=%q: run %s as a dedicated unprivileged user", o.user, s.product)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("# %s %s: written by `%s manifests systemd --role %s`.", s.product, s.role, s.product, s.role)
	line("[Unit]")
	line("Description=%s %s", s.product, s.r.summary)
	line("Wants=network-online.target")
	line("After=network-online.target")
	line("")
	line("[Service]")
	line("Type=notify")
	line("User=%s", o.user)
	line("Group=%s", o.group)
	exec := []string{systemdQuote(o.binary) + " " + s.role}
	for _, arg := range s.args {
		exec = append(exec, systemdQuote(arg))
	}
	// ReadWritePaths= must exist when the sandbox is set up, or the unit
	// fails to start (226/NAMESPACE), and under ProtectSystem=strict the
	// role cannot make it itself: a dir outside those systemd manages is
	// made first, for the user and private, by a command run outside the
	// sandbox ('+') that leaves a dir that exists as it is.
	for _, dir := range ownDirs(s.paths) {
		q := shellQuote(dir)
		line("ExecStartPre=+/bin/sh -c %s", systemdQuote(fmt.Sprintf("test -d %s || install -d -m 0700 -o %s -g %s %s", q, shellQuote(o.user), shellQuote(o.group), q)))
	}
	line("ExecStart=%s", strings.Join(exec, " \\\n\t"))
	line("Restart=always")
	line("RestartSec=5s")
	if s.role == "etcd" {
		line("# %s etcd exits %d once `%s etcd member remove` has removed its member: its data dir can never rejoin.",
			s.product, gcpetcd.RemovedExitCode, s.product)
		line("RestartPreventExitStatus=%d", gcpetcd.RemovedExitCode)
	}
	line("LimitNOFILE=65536")

	// Writable directories: systemd creates those under /var/lib, /var/log
	// and /run for the user, mode 0700; the others ExecStartPre makes.
	dirs := map[string][]string{}
	for _, p := range s.paths {
		if !p.writable {
			continue
		}
		directive, dir := managedDir(p.dir)
		dirs[directive] = append(dirs[directive], systemdQuote(dir))
	}
	for _, m := range managed {
		if len(dirs[m.directive]) > 0 {
			line("%s=%s", m.directive, strings.Join(dirs[m.directive], " "))
			line("%sMode=0700", m.directive)
		}
	}
	if len(dirs["ReadWritePaths"]) > 0 {
		line("ReadWritePaths=%s", strings.Join(dirs["ReadWritePaths"], " "))
	}
	line("UMask=0077")

	line("NoNewPrivileges=yes")
	line("ProtectSystem=strict")
	line("ProtectHome=read-only")
	if tmp := underTmp(s.paths); tmp != "" {
		line("# PrivateTmp is off: the flags name %s, which a private /tmp would hide.", tmp)
	} else {
		line("PrivateTmp=yes")
	}
	line("PrivateDevices=yes")
	line("ProtectKernelTunables=yes")
	line("ProtectKernelModules=yes")
	line("ProtectKernelLogs=yes")
	line("ProtectControlGroups=yes")
	line("ProtectClock=yes")
	line("ProtectHostname=yes")
	line("RestrictNamespaces=yes")
	line("RestrictRealtime=yes")
	line("RestrictSUIDSGID=yes")
	line("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK")
	line("LockPersonality=yes")
	line("MemoryDenyWriteExecute=yes")
	line("SystemCallArchitectures=native")
	line("CapabilityBoundingSet=")
	line("")
	line("[Install]")
	line("WantedBy=multi-user.target")
	_, err := io.WriteString(w, b.String())
	return err
}

// managed are the directories systemd makes for a unit's user.
var managed = []struct{ prefix, directive string }{
	{"/var/lib/", "StateDirectory"}, {"/var/log/", "LogsDirectory"}, {"/run/", "RuntimeDirectory"},
}

// managedDir returns the directive that makes dir writable, and dir as
// that directive names it.
func managedDir(dir string) (directive, name string) {
	for _, m := range managed {
		if rel, ok := strings.CutPrefix(dir, m.prefix); ok {
			return m.directive, rel
		}
	}
	return "ReadWritePaths", dir
}

// ownDirs returns the writable directories no directive makes.
func ownDirs(paths []hostPath) []string {
	var out []string
	for _, p := range paths {
		if directive, _ := managedDir(p.dir); p.writable && directive == "ReadWritePaths" {
			out = append(out, p.dir)
		}
	}
	return out
}

// shellQuote quotes a word for /bin/sh when it needs it.
func shellQuote(word string) string {
	if word != "" && strings.Trim(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@") == "" {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// systemdQuote writes one word of a unit's command line or path list:
// specifiers (%) and variables ($) doubled, and the word quoted when it
// has blanks, quotes or backslashes.
func systemdQuote(word string) string {
	word = strings.NewReplacer("%", "%%", "$", "$$").Replace(word)
	if word != "" && !strings.ContainsAny(word, " \t\n\"'\\;") {
		return word
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(word) + `"`
}

// underTmp returns the first path under /tmp or /var/tmp, or "".
func underTmp(paths []hostPath) string {
	for _, p := range paths {
		if within(p.dir, "/tmp") || within(p.dir, "/var/tmp") {
			return p.dir
		}
	}
	return ""
}
