package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// logsChildEnv holds the arguments the child of
// TestTheClientsLogIsJSONAtDebugAndNeverSaysASecret runs `run` with.
const logsChildEnv = "CLIENT_LOGS_CHILD"

// gctrace is the runtime's own line on stderr (proctest turns it on).
var gctrace = regexp.MustCompile(`^gc \d+ @`)

// loggedRun runs the client as its own process with the log flags given
// through a settle, a config change and a secret's rotation, with one
// module whose secret the vault refuses (a warning), and returns what
// the process wrote. The secret's values are first and second.
func loggedRun(t *testing.T, flags ...string) string {
	t.Helper()
	w, url, fillSock := newBareWorld(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	w.assign("plain", "/etc/plain/a.conf", "model = ${config:model}\n")
	w.assignSecret("sec", "/etc/sec/a.conf", "token = ${secret:tok}\n", "tok")
	w.assignSecret("nay", "/etc/nay/a.conf", "token = ${secret:tok}\n", "tok")
	v := devvault.New(zerolog.Nop())
	if err := v.Start(nc, js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	v.Set(t.Context(), "own/sec/tok", []byte(first))
	v.Refuse("own/nay/tok", "not for you")

	args, _ := json.Marshal(append([]string{"--node", "ace", "--nats", url, "--fill-socket", fillSock,
		"--state-dir", t.TempDir(), "--control", w.sock, "--refill", "1h"}, flags...))
	// No gctrace: the runtime writes its line in pieces to the same
	// stderr, and a log line landed inside one (a flake).
	p := inChild(t, logsChildEnv+"="+string(args), "GODEBUG=gctrace=0")
	root := filepath.Join(w.dir, "root")
	waitFile := func(path, want string) {
		t.Helper()
		bustest.Eventually(t, 20*time.Second, func() error {
			b, _ := os.ReadFile(filepath.Join(root, path))
			if string(b) != want {
				return fmt.Errorf("%s is %q, want %q", path, b, want)
			}
			return nil
		})
	}
	waitFile("/etc/sec/a.conf", "token = "+first+"\n")
	w.put(spec.ConfigBucket, "ace.plain.model", "opus")
	waitFile("/etc/plain/a.conf", "model = opus\n")
	v.Set(t.Context(), "own/sec/tok", []byte(second))
	nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"own/sec/tok"}`))
	waitFile("/etc/sec/a.conf", "token = "+second+"\n")
	w.until("failed", "status", "--control", w.sock) // nay, refused
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.Cmd.Wait()
	out := p.Output()
	for _, value := range []string{first, second} {
		if strings.Contains(out, strings.TrimPrefix(value, "PLANTED-")) {
			t.Errorf("the secret's value %q is in the log", value)
		}
	}
	return out
}

const first, second = "PLANTED-first-51d3a9", "PLANTED-second-77e0c2"

// logLines is out's lines but the runtime's gctrace.
func logLines(out string) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !gctrace.MatchString(line) {
			lines = append(lines, line)
		}
	}
	return lines
}

// The client at --log-level debug: every line it writes is one JSON
// object with its level, time, service and message (SPEC §5.1), a
// module's lines name it under "module", nothing is an error in a run
// where only a vault refused, and a secret's value, planted in the vault
// and rotated, is in no line.
func TestTheClientsLogIsJSONAtDebugAndNeverSaysASecret(t *testing.T) {
	if args := os.Getenv(logsChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		os.Exit(run(append([]string{"run"}, a...), os.Stdout, os.Stderr))
	}
	out := loggedRun(t, "--log-level", "debug")
	levels, modules := map[string]int{}, map[string]bool{}
	for _, line := range logLines(out) {
		var e map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		if err := d.Decode(&e); err != nil || d.More() {
			t.Errorf("a line that is not one JSON object: %q", line)
			continue
		}
		for _, k := range []string{"level", "time", "service", "message"} {
			if _, ok := e[k]; !ok {
				t.Errorf("a line without %q: %s", k, line)
			}
		}
		levels[fmt.Sprint(e["level"])]++
		if m, ok := e["module"].(string); ok {
			modules[m] = true
		}
		if e["level"] == "error" {
			t.Errorf("an error in a run where nothing went wrong but a refusal: %s", line)
		}
	}
	if levels["debug"] == 0 || levels["info"] == 0 || levels["warn"] == 0 || !modules["sec"] || !modules["plain"] || !modules["nay"] {
		t.Errorf("levels %v, modules named %v", levels, modules)
	}
	if t.Failed() {
		t.Logf("the log:\n%s", out)
	}
}

// --log-level warn leaves out info and debug; --log-format console is a
// line per event for people, its time and level first and each field as
// key=value, never JSON.
func TestTheClientsLogLevelAndConsoleFormatHold(t *testing.T) {
	if args := os.Getenv(logsChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		os.Exit(run(append([]string{"run"}, a...), os.Stdout, os.Stderr))
	}
	out := loggedRun(t, "--log-level", "warn")
	lines := logLines(out)
	for _, line := range lines {
		if !strings.Contains(line, `"level":"warn"`) && !strings.Contains(line, `"level":"error"`) {
			t.Errorf("at --log-level warn: %s", line)
		}
	}
	if !strings.Contains(out, `"module":"nay"`) {
		t.Errorf("the refused module's warning is not in the log:\n%s", out)
	}

	out = loggedRun(t, "--log-format", "console")
	console := regexp.MustCompile(`^\d\d:\d\d:\d\d (DBG|INF|WRN|ERR) `)
	for _, line := range logLines(out) {
		if !console.MatchString(line) || strings.HasPrefix(line, "{") {
			t.Errorf("not a console line: %q", line)
		}
	}
	if !strings.Contains(out, "module applied") || !strings.Contains(out, "module=sec") {
		t.Errorf("the console log does not say sec applied:\n%s", out)
	}
	if t.Failed() {
		t.Logf("the log:\n%s", out)
	}
}

// assignSecret puts ace's assignment of module: one file from one
// template, and the secret it names.
func (w *world) assignSecret(module, path, template, secret string) {
	w.t.Helper()
	w.assign(module, path, template)
	kv, err := w.js.KeyValue(context.Background(), spec.AssignmentsBucket)
	if err != nil {
		w.t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), spec.EncodeKey("ace", module))
	if err != nil {
		w.t.Fatal(err)
	}
	var a map[string]any
	json.Unmarshal(e.Value(), &a)
	a["provisioning"].(map[string]any)["secrets"] = []map[string]string{{"name": secret, "path": "/etc/" + module + "/" + secret}}
	b, _ := json.Marshal(a)
	w.put(spec.AssignmentsBucket, spec.EncodeKey("ace", module), string(b))
}
