package manifests

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSystemdUnits(t *testing.T) {
	analyze, _ := exec.LookPath("systemd-analyze")
	binary, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range roleNames {
		t.Run(role, func(t *testing.T) {
			out, err := run(t, append([]string{"systemd", "--role", role, "--binary", binary, "--"}, roleArgs[role]...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{"Type=notify", "Restart=always", "User=gcp", "Group=gcp", "NoNewPrivileges=yes",
				"ProtectSystem=strict", "PrivateTmp=yes", "UMask=0077", "WantedBy=multi-user.target"} {
				if !strings.Contains(out, "\n"+line+"\n") {
					t.Errorf("unit lacks %s:\n%s", line, out)
				}
			}
			if got := execStart(t, out); !slices.Equal(got, append([]string{binary, role}, pod(t, role)...)) {
				t.Errorf("ExecStart %q does not run what the static pod runs", got)
			}
			switch role {
			case "etcd":
				mustHave(t, out, "StateDirectory=gcp/etcd\nStateDirectoryMode=0700\n")
				mustHave(t, out, "\nRestartPreventExitStatus=78\n")
			case "apiserver":
				mustHave(t, out, "LogsDirectory=gcp\n")
			}
			if analyze == "" {
				t.Log("systemd-analyze is not installed; checked the unit's fields only")
				return
			}
			unit := filepath.Join(t.TempDir(), "gcp-"+role+".service")
			if err := os.WriteFile(unit, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			verify := exec.Command(analyze, "verify", unit)
			msg, err := verify.CombinedOutput()
			// verify exits 0 on unknown keys but names them.
			if err != nil || strings.Contains(string(msg), unit) {
				t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, msg, out)
			}
		})
	}
}

// execStart returns the words of the unit's ExecStart, unquoted as
// systemd does for the quoting systemdQuote writes.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(unit, "\nExecStart=")
	if !ok {
		t.Fatalf("no ExecStart:\n%s", unit)
	}
	var line strings.Builder
	for _, l := range strings.Split(rest, "\n") {
		l = strings.TrimLeft(l, "\t")
		if s, cont := strings.CutSuffix(l, " \\"); cont {
			line.WriteString(s + " ")
			continue
		}
		line.WriteString(l)
		break
	}
	var words []string
	var word strings.Builder
	quoted, inWord := false, false
	s := line.String()
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"':
			quoted, inWord = !quoted, true
		case ch == '\\' && quoted && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				word.WriteByte('\n')
			case 't':
				word.WriteByte('\t')
			default:
				word.WriteByte(s[i])
			}
		case ch == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	for i, w := range words {
		words[i] = strings.NewReplacer("%%", "%", "$$", "$").Replace(w)
	}
	return words
}

func TestSystemdQuote(t *testing.T) {
	for _, arg := range []string{"--a=b", `--x=has space`, `--y="q"`, `--z=back\slash`, "--p=100%", "--v=$HOME", ";"} {
		unit := "\nExecStart=" + systemdQuote(arg) + "\n"
		if got := execStart(t, unit); len(got) != 1 || got[0] != arg {
			t.Errorf("systemdQuote(%q) = %s reads back as %q", arg, systemdQuote(arg), got)
		}
	}
}

func TestPrivateTmpOffForPathsUnderTmp(t *testing.T) {
	out, err := run(t, "systemd", "--role", "controllers", "--kubeconfig=/tmp/x/controllers.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "PrivateTmp=yes") || !strings.Contains(out, "# PrivateTmp is off: the flags name /tmp/x") {
		t.Errorf("a unit whose files are under /tmp must not hide /tmp:\n%s", out)
	}
}

// TestSystemdMakesItsOwnDirs: a writable directory outside those systemd
// makes (a data dir under /srv) is made, private and the user's, before
// the sandbox needs it, since ReadWritePaths= of a directory that does
// not exist fails the unit at start; one that exists is left as it is.
func TestSystemdMakesItsOwnDirs(t *testing.T) {
	binary, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, append([]string{"systemd", "--role", "etcd", "--binary", binary, "--"},
		append(slices.Clone(roleArgs["etcd"]), "--data-dir=/srv/gcp data/etcd")...)...)
	if err != nil {
		t.Fatal(err)
	}
	mustHave(t, out, "\nReadWritePaths=\"/srv/gcp data/etcd\"\n")
	mustHave(t, out, "\nExecStartPre=+/bin/sh -c \"test -d '/srv/gcp data/etcd' || install -d -m 0700 -o gcp -g gcp '/srv/gcp data/etcd'\"\n")
	if strings.Contains(out, "StateDirectory=") {
		t.Errorf("a data dir outside /var/lib is no StateDirectory:\n%s", out)
	}
	if strings.Index(out, "\nExecStartPre=") > strings.Index(out, "\nExecStart=") {
		t.Errorf("ExecStartPre after ExecStart:\n%s", out)
	}
	if analyze, _ := exec.LookPath("systemd-analyze"); analyze != "" {
		unit := filepath.Join(t.TempDir(), "gcp-etcd.service")
		if err := os.WriteFile(unit, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(analyze, "verify", unit).CombinedOutput(); err != nil || strings.Contains(string(msg), unit) {
			t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, msg, out)
		}
	}
	// The command the unit runs makes the dir, and keeps one that exists.
	script := regexp.MustCompile(`ExecStartPre=\+/bin/sh -c "(.*)"`).FindStringSubmatch(out)
	dir := filepath.Join(t.TempDir(), "it's new", "etcd")
	cmd := strings.ReplaceAll(strings.ReplaceAll(script[1], `\"`, `"`), "'/srv/gcp data/etcd'", shellQuote(dir))
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Fatal(err)
	}
	cmd = strings.NewReplacer("-o gcp", "-o "+shellQuote(u.Username), "-g gcp", "-g "+shellQuote(g.Name)).Replace(cmd)
	for range 2 {
		if msg, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, msg)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s made %v %v", cmd, fi, err)
		}
	}
}
