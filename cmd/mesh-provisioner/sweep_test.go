package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// sweepBuckets are the buckets a sweep test writes its mesh in; put
// writes v at key, a string as it is and anything else as JSON.
type sweepBuckets struct {
	assignments, needs, applied jetstream.KeyValue
	put                         func(kv jetstream.KeyValue, key string, v any)
}

// sweepMesh starts a bus with the server's buckets (the registry published
// when registry is true) and an assignments bucket, has write fill them,
// then serves the verb on it. It returns the bus's URL.
func sweepMesh(t *testing.T, registry bool, write func(b sweepBuckets)) string {
	t.Helper()
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := server.EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	if registry {
		reg, _ := js.KeyValue(ctx, spec.RegistryBucket)
		if _, _, err := server.PublishRegistry(ctx, reg, server.Registry()); err != nil {
			t.Fatal(err)
		}
	}
	b := sweepBuckets{put: func(kv jetstream.KeyValue, key string, v any) {
		raw, ok := v.(string)
		if !ok {
			j, _ := json.Marshal(v)
			raw = string(j)
		}
		if _, err := kv.Put(ctx, key, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}}
	var err error
	if b.assignments, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket}); err != nil {
		t.Fatal(err)
	}
	b.needs, _ = js.KeyValue(ctx, spec.NeedsBucket)
	b.applied, _ = js.KeyValue(ctx, spec.AppliedBucket)
	write(b)
	stop, err := server.ServeQuery(context.Background(), nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// The verb's subscription reaches the server before any sweep is
	// asked on another connection (else: "no responders").
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s.ClientURL()
}

// mesh starts a bus and the server's verb over a mesh where gitea serves
// none of its three consumers, and node h is healthy. It returns the URL.
func mesh(t *testing.T) string {
	return sweepMesh(t, true, func(b sweepBuckets) {
		need := func(node, module, kind, name, state, why string) {
			b.put(b.needs, spec.EncodeKey(node, module, kind, name),
				map[string]string{"node": node, "module": module, "kind": kind, "name": name, "state": state, "why": why})
		}
		plan := `{"provisioning":{"provisions":[{"provision":"gitea-read","provider":"gitea","credential":"token"}]}}`
		for _, n := range []string{"ace", "g14", "novox", "h", "w"} {
			b.put(b.assignments, n+".claude-code", plan)
		}
		for _, n := range []string{"ace", "g14", "novox"} {
			need(n, "claude-code", "bound", "gitea-read:url", "failed", "gitea does not offer gitea-read")
		}
		need("novox", "claude-code", "config", "model", "waiting", "evil \x1b[2J\x07 \u009b why")
		need("h", "claude-code", "config", "model", "met", "")
		b.put(b.applied, "ace.claude-code", `{"state":"failed"}`)
		need("w", "claude-code", "config", "model", "waiting", "not yet")
	})
}

func runSweep(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"sweep"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestSweepPrintsWorstFirstAndExitsOne(t *testing.T) {
	url := mesh(t)
	code, out, errs := runSweep("--nats", url)
	t.Logf("mesh-provisioner sweep:\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a need failed); stderr %s", code, errs)
	}
	// A block per finding, worst first: the failed finding names each of
	// the three modules it holds back, the failed module comes next, then
	// the waiting findings.
	lines := strings.Split(out, "\n")
	for i, want := range []string{
		`^failed        gitea  bound gitea-read:url  "gitea does not offer gitea-read"  since \d+s$`,
		`^ {14}ace/claude-code$`,
		`^ {14}g14/claude-code$`,
		`^ {14}novox/claude-code$`,
		`^failed        module ace/claude-code  ""$`,
		`^waiting       mesh-config  config model  `,
		`^ {14}novox/claude-code$`,
	} {
		got := ""
		if i < len(lines) {
			got = lines[i]
		}
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("line %d %q, want %s", i+1, got, want)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b") || !strings.Contains(out, `evil \x1b[2J\a \u009b why`) {
		t.Errorf("control bytes not escaped:\n%q", out)
	}
	for _, want := range []string{
		"modules 1: 0 applied, 0 waiting, 1 failed\n",
		"needs 6: 1 met, 2 waiting, 0 stood asked (over 10m0s), 3 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runSweep("--nats", url, "--json", "--stood-after", "1ms")
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("--json holds raw control runes:\n%q", out)
	}
	var r server.SweepReply
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, out)
	}
	if len(r.Findings) != 3 || r.Findings[1].Verdict != server.VerdictStoodAsked || r.Summary.Needs.StoodAsked != 2 || strings.Contains(out, `"pages"`) {
		t.Errorf("--json with --stood-after 1ms:\n%s", out)
	}
}

func TestSweepExitsZeroWhenNothingHoldsBack(t *testing.T) {
	url := mesh(t)
	code, out, errs := runSweep("--nats", url, "--node", "h")
	if code != 0 || !strings.Contains(out, "needs 1: 1 met, 0 waiting") {
		t.Errorf("node h: exit %d\n%s%s", code, out, errs)
	}
	// --json prints the reply, whose lists are lists when empty: a script
	// looping over "findings" failed on exactly the healthy case, null
	// (an outside audit).
	code, out, errs = runSweep("--nats", url, "--node", "h", "--json")
	var reply map[string]any
	if err := json.Unmarshal([]byte(out), &reply); code != 0 || err != nil {
		t.Fatalf("node h --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	for _, list := range []string{"findings", "orphans"} {
		if l, ok := reply[list].([]any); !ok || len(l) != 0 {
			t.Errorf("node h --json: %s is %#v, not []\n%s", list, reply[list], out)
		}
	}
	// A waiting need that has not stood long holds nothing back either.
	code, out, errs = runSweep("--nats", url, "--node", "w", "--module", "claude-code", "--stood-after", "1h")
	if code != 0 || !strings.Contains(out, "1 waiting, 0 stood asked") {
		t.Errorf("node w: exit %d\n%s", code, out)
	}
	if strings.Contains(errs, "no module") {
		t.Errorf("a node with modules is said to have none: %s", errs)
	}
	// A node name mistyped holds nothing back, and says it matched nothing
	// (TestASweepNarrowedToANameNothingBearsSaysSo).
	code, out, errs = runSweep("--nats", url, "--node", "nosuch")
	if code != 0 || !strings.Contains(out, "modules 0") || !strings.Contains(errs, "no module is assigned to node nosuch and no key names it") {
		t.Errorf("node nosuch: exit %d\n%s%s", code, out, errs)
	}
}

func TestSweepExitsTwoWhenItCannotSweep(t *testing.T) {
	port := bustest.FreePort(t)
	code, _, errs := runSweep("--nats", fmt.Sprintf("nats://127.0.0.1:%d", port))
	if code != 2 || !strings.Contains(errs, "connecting") {
		t.Errorf("no bus: exit %d, stderr %q", code, errs)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--stood-after", "0s"}, "--stood-after"},
		{[]string{"--stood-after", "-5m"}, "--stood-after"},
		{[]string{"--stood-after", "soon"}, "stood-after"},
		{[]string{"--color"}, "color"},
		{[]string{"extra"}, "extra"},
	} {
		code, _, errs := runSweep(c.args...)
		if code != 2 || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %s", c.args, code, errs, c.says)
		}
	}
}
