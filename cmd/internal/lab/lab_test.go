package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// labDir is a short temporary directory (the lab's unix sockets live in it).
func labDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// appliedReports reads every report of the applied bucket at url, as the
// user of creds.
func appliedReports(t *testing.T, url, creds string) map[string]report.Report {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserCredentials(creds))
	if err != nil {
		t.Fatalf("connecting to the lab's NATS: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, spec.AppliedBucket)
	if err != nil {
		t.Fatalf("opening %s: %v", spec.AppliedBucket, err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatalf("listing %s: %v", spec.AppliedBucket, err)
	}
	out := map[string]report.Report{}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatalf("getting %s of %s: %v", k, spec.AppliedBucket, err)
		}
		var r report.Report
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			t.Fatalf("%s of %s: %v", k, spec.AppliedBucket, err)
		}
		out[k] = r
	}
	return out
}

func readFile(t *testing.T, dir, node, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "root", node, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("the lab did not fill %s on %s: %v", path, node, err)
	}
	return string(b)
}

// Bytes the example mesh must fill (examples/mesh: templates, config.json,
// bound.json, placement; the lab's stand-ins for the merged sshd files).
const (
	wantClaudeConfigACE = `# Written by the mesh provisioner (module claude-code on ace); edits are put back.
model = "claude-sonnet"
listen = "127.0.0.1:8417"
state_dir = "/var/lib/claude-code"
api_key_file = "/etc/claude-code/api-key"

[forge]
url = "https://forge.mesh.internal"
user = "claude-code-ace"
env_file = "/etc/claude-code/forge.env"
`
	// SPEC §4.4: items ordered by contributor, each introduced by
	// "<comment> <contributor>" and ending in a newline.
	wantZshACE = `# Written by the mesh provisioner (module zsh on ace); edits are put back.
# Each module on this node that contributes to shell:zsh:normal has its part below.
# claude-code
export CLAUDE_CODE_URL="http://127.0.0.1:8417"
alias cc-logs='journalctl -u claude-code.service -f'
# gitea
export GITEA_URL="https://forge.mesh.internal"
alias forge='xdg-open "$GITEA_URL" 2>/dev/null || echo "$GITEA_URL"'

`
	wantBanner = `ace: a node of the mesh. Authorised use only.
(Written once by the mesh provisioner; edit freely, it is not put back.)
`
	// managed-keys: Port set in place, the local line kept, the rest appended.
	wantMeshConf = `# A local edit made before the provisioner ran (written by mesh-lab).
Port=22
ClientAliveInterval=120
PasswordAuthentication=no
PermitRootLogin=prohibit-password
AllowGroups=ops mesh-admins
`
	// managed-block: the stand-in kept, the block appended.
	wantSshdConfig = `# Stand-in for the distribution's sshd_config, written by mesh-lab.
Include /etc/ssh/sshd_config.d/*.conf
KbdInteractiveAuthentication no
UsePAM yes
# BEGIN mesh sshd
Match Address 10.42.0.0/16
    AllowTcpForwarding yes
    X11Forwarding no
# END mesh sshd
`
)

var wantKeys = []string{
	"ace.claude-code", "ace.gitea", "ace.sshd", "ace.zsh",
	"g14.claude-code", "g14.grafana", "g14.zsh",
}

// TestOnceFillsTheExampleMesh is `mesh-lab --once`: it returns nil; every
// module is applied but grafana on g14, which waits on config smtp-host;
// the files are there with the expected bytes; the summary and the
// explanation are printed; no secret reaches the output or the logs.
func TestOnceFillsTheExampleMesh(t *testing.T) {
	dir := labDir(t)
	var out, logs bustest.Buffer
	var reports map[string]report.Report
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := Run(ctx, Config{
		Dir: dir, Port: 0, Once: true, Out: &out,
		Log:       zerolog.New(&logs).Level(zerolog.DebugLevel),
		OnSettled: func(url, creds string) { reports = appliedReports(t, url, creds) },
	})
	if err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}

	if got := slices.Sorted(maps.Keys(reports)); !slices.Equal(got, wantKeys) {
		t.Errorf("applied bucket keys %q, want %q", got, wantKeys)
	}
	for key, r := range reports {
		if key == "g14.grafana" {
			continue
		}
		if r.State != "applied" {
			t.Errorf("report %s is %s (%s %v), want applied", key, r.State, r.Reason, r.Waiting)
		}
	}
	g := reports["g14.grafana"]
	if g.State != "waiting" || len(g.Waiting) != 1 || g.Waiting[0].Kind != "config" || g.Waiting[0].Name != "smtp-host" {
		t.Errorf("report g14.grafana: %+v, want waiting on config smtp-host alone", g)
	} else if !strings.Contains(g.Waiting[0].Why, "g14.grafana.smtp-host") {
		t.Errorf("g14.grafana waits %q, want the key g14.grafana.smtp-host named", g.Waiting[0].Why)
	}

	for _, f := range []struct{ node, path, want string }{
		{"ace", "/etc/claude-code/config.toml", wantClaudeConfigACE},
		{"ace", "/etc/zsh/zshrc.d/mesh.zsh", wantZshACE},
		{"ace", "/etc/ssh/banner.txt", wantBanner},
		{"ace", "/etc/ssh/sshd_config.d/60-mesh.conf", wantMeshConf},
		{"ace", "/etc/ssh/sshd_config", wantSshdConfig},
	} {
		if got := readFile(t, dir, f.node, f.path); got != f.want {
			t.Errorf("%s on %s:\n%s\nwant:\n%s", f.path, f.node, got, f.want)
		}
	}
	if got := readFile(t, dir, "g14", "/etc/claude-code/config.toml"); !strings.Contains(got, `model = "claude-opus"`) {
		t.Errorf("g14's claude-code config.toml lacks its own model:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "root", "g14", "etc", "grafana", "grafana.ini")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("grafana.ini on g14 must not be written while grafana waits (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "root", "ace", "etc", "grafana")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ace got g14's grafana (stat: %v)", err)
	}

	text := out.String()
	for _, want := range []string{
		"restart claude-code.service on ace",
		"reload ssh.service on ace",
		"grafana on g14: waiting",
		"mesh-config_resolved g14.grafana.smtp-host",
		// the sweep of the mesh, after the table (SPEC §6.2)
		"waiting       mesh-config  config smtp-host",
		"\n              g14/grafana\n",
		"modules 7: 6 applied, 1 waiting, 0 failed",
		"1 waiting, 0 stood asked (over 10m0s), 0 failed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, line := range []string{"ace   claude-code  applied", "g14   grafana      waiting"} {
		if !strings.Contains(text, line) {
			t.Errorf("summary lacks the line %q:\n%s", line, text)
		}
	}
	for _, secret := range []string{"dev-only-api-key", "dev-only-forge-token"} {
		if strings.Contains(text, secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("a secret value (%s…) reached the lab's output or logs", secret)
		}
	}
}

// TestRunFollowsChangesAndStops is the README's tour: the lab runs on; a
// config value put on the bus is filled again and its program restarted;
// setting the value grafana waits for applies it; cancelling stops every
// part and removes the sockets.
func TestRunFollowsChangesAndStops(t *testing.T) {
	dir := labDir(t)
	var out bustest.Buffer
	urls := make(chan [2]string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Dir: dir, Out: &out, Log: zerolog.Nop(), OnSettled: func(u, c string) { urls <- [2]string{u, c} }})
	}()
	var url [2]string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run returned before settling: %v\n%s", err, out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("not settled within 60s:\n%s", out.String())
	}

	// The README's tour: explain says how each binding was judged (SPEC
	// §4.6): gitea_bound refuses gitea-read, its have decides.
	e, err := explainModule(ctx, filepath.Join(dir, "ace", "control.sock"), "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := control.WriteExplanation(&text, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude-code on ace: applied",
		"gitea's offer gitea-read (mesh-controller_assignments ace.gitea): judged by its have (no helper answers it)",
		"gitea's offer forge-account (mesh-controller_assignments ace.gitea): answered by its helper (the entry in gitea_bound decides)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("explain of claude-code on ace lacks %q:\n%s", want, text.String())
		}
	}

	nc, err := nats.Connect(url[0], nats.UserCredentials(url[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, spec.ConfigBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx, "ace.claude-code.model", "opus-4"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		got := readFile(t, dir, "ace", "/etc/claude-code/config.toml")
		if !strings.Contains(got, `model = "opus-4"`) {
			return fmt.Errorf("config.toml on ace not filled again:\n%s", got)
		}
		if n := strings.Count(out.String(), "program: restart claude-code.service on ace"); n != 2 { // not the hint the lab prints
			return fmt.Errorf("claude-code.service on ace restarted %d times, want 2 (start, change):\n%s", n, out.String())
		}
		// The report's line names the one file the change wrote, not
		// every file whose last fill wrote it (the README's "only that
		// file was rendered and sent").
		if want := "  report: ace claude-code: applied (/etc/claude-code/config.toml written)\n"; !strings.Contains(out.String(), want) {
			return fmt.Errorf("the lab does not print %q:\n%s", want, out.String())
		}
		return nil
	})
	if got := readFile(t, dir, "g14", "/etc/claude-code/config.toml"); !strings.Contains(got, `model = "claude-opus"`) {
		t.Errorf("g14's config.toml moved with ace's value:\n%s", got)
	}

	// The tour's prov.ask (SPEC §5.4), made as it says: as ace's tool
	// runner, on its inbox, it is answered the value just put.
	askAsTheTourSays(t, &out, "opus-4")

	// The bus runs in operator mode: each part has its .creds, kept 0600,
	// and a node's reaches its own config and not another node's.
	creds := filepath.Join(dir, "creds")
	for _, user := range []string{"lab", "provisioner-ace", "provisioner-g14", "toolrunner-ace", "mesh-provisioner", "mesh-vault", "mesh-controller", "mesh-config", "gitea", "mesh-operator"} {
		if fi, err := os.Stat(filepath.Join(creds, user+".creds")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("creds of %s: %v (mode %v), want a 0600 file", user, err, fi)
		}
	}
	refused := make(chan string, 4)
	ace, err := nats.Connect(url[0], nats.UserCredentials(filepath.Join(creds, "provisioner-ace.creds")),
		nats.CustomInboxPrefix("_INBOX.provisioner.ace"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case refused <- err.Error():
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer ace.Close()
	aceJS, _ := jetstream.New(ace)
	aceKV, err := aceJS.KeyValue(ctx, spec.ConfigBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aceKV.Get(ctx, "ace.claude-code.model"); err != nil {
		t.Errorf("ace's creds reading ace's config: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	if _, err := aceKV.Get(short, "g14.grafana.smtp-host"); err == nil {
		t.Error("ace's creds read g14's config")
	}
	cancelShort()
	select {
	case e := <-refused:
		if !strings.Contains(e, "Permissions Violation") || !strings.Contains(e, "g14.grafana.smtp-host") {
			t.Errorf("ace reading g14's config: the bus said %q", e)
		}
	case <-time.After(3 * time.Second):
		t.Error("ace reading g14's config: no permissions violation from the bus")
	}

	if _, err := kv.PutString(ctx, "g14.grafana.smtp-host", "smtp.mesh.internal"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(out.String(), "report: g14 grafana: applied") {
			return fmt.Errorf("no report of grafana applied:\n%s", out.String())
		}
		return nil
	})
	if got := readFile(t, dir, "g14", "/etc/grafana/grafana.ini"); !strings.Contains(got, "host = smtp.mesh.internal\n") {
		t.Errorf("grafana.ini on g14:\n%s", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop within 30s of its context ending")
	}
	for _, user := range []string{"lab", "mesh-operator"} {
		if want := "--creds " + filepath.Join(creds, user+".creds"); !strings.Contains(out.String(), want) {
			t.Errorf("the tour does not say %q:\n%s", want, out.String())
		}
	}
	for _, node := range []string{"ace", "g14"} {
		for _, sock := range []string{"fill.sock", "control.sock"} {
			if _, err := os.Stat(filepath.Join(dir, node, sock)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s of %s left after the lab stopped (stat: %v)", sock, node, err)
			}
		}
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		if nc.IsConnected() {
			return errors.New("the lab's nats-server still serves after Run returned")
		}
		return nil
	})
}

// TestTakenPortIsSaid: a port already in use is an error naming the way
// out, before anything starts.
func TestTakenPortIsSaid(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	err = Run(context.Background(), Config{Dir: labDir(t), Port: port, Once: true, Out: &bustest.Buffer{}, Log: zerolog.Nop()})
	if err == nil || !strings.Contains(err.Error(), "--port 0") || !strings.Contains(err.Error(), "make run ARGS='--port 0'") {
		t.Fatalf("Run on a taken port: %v, want an error saying --port 0, and how make run passes it", err)
	}
}

// TestUnsettledSaysWhatIsOff: --once fails, naming the module, when a
// module is not applied, when grafana does not wait, when a report is
// missing or left from an earlier lab.
func TestUnsettledSaysWhatIsOff(t *testing.T) {
	start := time.Now()
	now := start.Add(time.Second).UTC().Format(time.RFC3339Nano)
	old := start.Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	settled := func() *reports {
		r := newReports(wantKeys, start)
		for _, k := range wantKeys {
			toks, _ := spec.DecodeKey(k, 2)
			r.byKey[k] = report.Report{Node: toks[0], Module: toks[1], State: "applied", At: now}
		}
		r.byKey["g14.grafana"] = report.Report{Node: "g14", Module: "grafana", State: "waiting", At: now,
			Waiting: []report.Waiting{{Kind: "config", Name: "smtp-host"}}}
		return r
	}
	if err := settled().unsettled(); err != nil {
		t.Fatalf("the example mesh as it should end up: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(r *reports)
		want   string
	}{
		{"failed", func(r *reports) {
			r.byKey["ace.sshd"] = report.Report{State: "failed", At: now, Reason: "fill socket refused"}
		}, "ace.sshd is failed, want applied: fill socket refused"},
		{"grafana applied", func(r *reports) {
			r.byKey["g14.grafana"] = report.Report{State: "applied", At: now}
		}, "g14.grafana is applied, want waiting"},
		{"missing", func(r *reports) { delete(r.byKey, "ace.zsh") }, "ace.zsh: no report yet"},
		{"stale", func(r *reports) {
			rep := r.byKey["ace.gitea"]
			rep.At = old
			r.byKey["ace.gitea"] = rep
		}, "ace.gitea: no report yet"},
	} {
		r := settled()
		c.change(r)
		err := r.unsettled()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestASecondLabOnTheSameDirWipesNothing: a lab started on the directory
// of one that runs (make run twice, or --port 0) is refused naming the
// holder, and the running lab's creds and sockets are untouched.
func TestASecondLabOnTheSameDirWipesNothing(t *testing.T) {
	dir := labDir(t)
	l, err := newLayout(dir, []string{"ace"})
	if err != nil {
		t.Fatal(err)
	}
	release, err := l.lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := l.prepare(false); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(l.creds(), "lab.creds")
	if err := os.MkdirAll(l.creds(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("the running lab's"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Config{Dir: dir, Port: 0, Once: true, Out: &bustest.Buffer{}, Log: zerolog.Nop()})
	if err == nil || !strings.Contains(err.Error(), "another lab runs in") || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("a second lab on %s: %v, want an error naming the running lab's pid", dir, err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "the running lab's" {
		t.Fatalf("the running lab's creds after a second lab: %q, %v", b, err)
	}
}
