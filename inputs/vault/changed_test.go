package vault

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// planted is what a misbehaving vault put where a name belongs: it must
// never reach the log.
const planted = "PLANTED-s3cr3t-7f3a"

// watchLog runs WatchChanged's watch with lim (nil: WatchChanged itself)
// on a fresh server; it returns the publishing connection, the log and
// the names fn was called with.
func watchLog(t *testing.T, lim *warnLimit) (pub func(payload string), log *bustest.Buffer, names chan string) {
	t.Helper()
	s := bustest.Start(t)
	nc := bustest.Connect(t, s)
	log = &bustest.Buffer{}
	names = make(chan string, 16)
	l := zerolog.New(log)
	fn := func(name string) { names <- name }
	var err error
	if lim == nil {
		_, err = WatchChanged(nc, l, fn)
	} else {
		_, err = watchChanged(nc, l, lim, fn)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func(payload string) {
		if err := nc.Publish(spec.VaultChangedSubject, []byte(payload)); err != nil {
			t.Fatal(err)
		}
	}, log, names
}

// waitName publishes a well-formed event for name and waits for fn to get
// it: every event published before it was handled by then.
func waitName(t *testing.T, pub func(string), names chan string, name string) {
	t.Helper()
	pub(`{"secret":"` + name + `"}`)
	select {
	case got := <-names:
		if got != name {
			t.Fatalf("fn got %q, want %q (an event out of shape reached it)", got, name)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("fn not called for %s within 30s", name)
	}
}

// warnings are the log's warning lines, decoded.
func warnings(t *testing.T, log *bustest.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "warn" {
			out = append(out, m)
		}
	}
	return out
}

// A secret-changed event out of shape (SPEC §2.3: {"secret": "<vault
// name>"}) is not dropped quietly: a warning says what was wrong and how
// long the payload was, never the payload itself (a misbehaving vault may
// have put a value there).
func TestASecretChangedOutOfShapeIsWarnedWithoutItsPayload(t *testing.T) {
	pub, log, names := watchLog(t, nil)
	cases := []struct{ payload, problem string }{
		{planted, "not JSON"},
		{`{"secret": "` + planted, "not JSON"},
		{`["` + planted + `"]`, "not a JSON object"},
		{`"` + planted + `"`, "not a JSON object"},
		{`{"value": "` + planted + `"}`, `no "secret"`},
		{`{"secret": ""}`, "empty"},
		{`{"secret": null}`, `no "secret"`},
		{`{"secret": 4242}`, "number, not a string"},
		{`{"secret": {"value": "` + planted + `"}}`, "object, not a string"},
	}
	for _, c := range cases {
		pub(c.payload)
	}
	waitName(t, pub, names, "own/app/api-key")
	if strings.Contains(log.String(), planted) {
		t.Fatalf("the log shows the payload:\n%s", log)
	}
	w := warnings(t, log)
	if len(w) != len(cases) {
		t.Fatalf("%d warnings for %d events out of shape:\n%s", len(w), len(cases), log)
	}
	for i, c := range cases {
		problem, _ := w[i]["problem"].(string)
		if !strings.Contains(problem, c.problem) || w[i]["subject"] != spec.VaultChangedSubject ||
			w[i]["bytes"] != float64(len(c.payload)) {
			t.Errorf("event %d: warning %v; want subject %s, a problem saying %q and bytes %d",
				i, w[i], spec.VaultChangedSubject, c.problem, len(c.payload))
		}
	}
}

// A flood of events out of shape does not fill the log: at most
// changedWarnBurst warnings a changedWarnEvery, the next one saying how
// many were not logged.
func TestAFloodOfSecretChangedOutOfShapeIsWarnedAtARate(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1e9, 0)
	lim := &warnLimit{burst: changedWarnBurst, every: changedWarnEvery, now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}
	pub, log, names := watchLog(t, lim)
	const flood = 500
	for range flood {
		pub(planted)
	}
	waitName(t, pub, names, "own/app/a")
	if w := warnings(t, log); len(w) != changedWarnBurst {
		t.Fatalf("%d warnings for a flood of %d within %s, want %d", len(w), flood, changedWarnEvery, changedWarnBurst)
	}
	mu.Lock()
	now = now.Add(changedWarnEvery)
	mu.Unlock()
	pub(`{"secret": 1}`)
	waitName(t, pub, names, "own/app/b")
	w := warnings(t, log)
	if len(w) != changedWarnBurst+1 {
		t.Fatalf("%d warnings once %s passed, want %d", len(w), changedWarnEvery, changedWarnBurst+1)
	}
	if last := w[len(w)-1]; last["not_logged_before"] != float64(flood-changedWarnBurst) {
		t.Fatalf("the first warning after the flood: %v; want not_logged_before %d", last, flood-changedWarnBurst)
	}
	if strings.Contains(log.String(), planted) {
		t.Fatal("the log shows the payload")
	}
}
