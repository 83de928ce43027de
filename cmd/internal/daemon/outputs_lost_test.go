package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An output bucket (needs, applied, collect) deleted or purged whole while
// the client runs is written again at its next refill tick
// (stage.CheckOutputs): what the client remembers having written no longer
// keeps it from putting again what the bus lost, and nothing is filled
// again on disk. Before, nothing came back until the client reconnected or
// restarted, and the server's sweep counted 0 modules.

// outputsRefill is the clients' refill here: the look at the output
// buckets rides its tick.
const outputsRefill = 500 * time.Millisecond

var outputBuckets = []string{spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket}

// lostOutputsLog is what the client logs when it finds an output bucket lost.
const lostOutputsLog = "output buckets deleted or purged"

// outputsMesh is node ace running web (three files, needs of config, port
// and dir), alpha (an item of shell:zsh:normal), zsh (which collects it)
// and app (secret-bearing files from the dev vault: hmac digests in its
// report), filled by a mesh-fill of its own keeping state (program
// restarts logged), refilling every outputsRefill; once all are applied
// and the client idle.
func outputsMesh(t *testing.T) (*mesh, *stateFill) {
	t.Helper()
	m, _ := appMesh(t, ownApp, provApp)
	m.webModule()
	m.contribute("ace", "alpha", "alias ll='ls -l'\n")
	m.collector("ace", "zsh")
	f := m.stateFill()
	m.client("ace", f.socket, refillEvery(outputsRefill))
	for _, mod := range []string{"web", "alpha", "zsh", "app"} {
		m.waitState("ace", mod, "applied")
	}
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\nalias ll='ls -l'\n")
	m.waitValue(spec.CollectBucket, zshKey("ace", "alpha"), itemJSON(zshColl, "alpha", "alias ll='ls -l'\n"))
	m.settle()
	return m, f
}

// outputEntry is one key of an output bucket: its value (a report's "at"
// taken out: a report written again says when) and its revision.
type outputEntry struct {
	value string
	rev   uint64
}

// outputsOf is every key of node in bucket.
func (m *mesh) outputsOf(bucket, node string) map[string]outputEntry {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w, err := m.kv(bucket).Watch(ctx, spec.EncodeToken(node)+".>", jetstream.IgnoreDeletes())
	if err != nil {
		m.t.Fatalf("%s: %v", bucket, err)
	}
	defer w.Stop()
	out := map[string]outputEntry{}
	for e := range w.Updates() {
		if e == nil {
			return out
		}
		v := string(e.Value())
		if bucket == spec.AppliedBucket {
			var r map[string]any
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				m.t.Fatalf("%s %s: %v", bucket, e.Key(), err)
			}
			delete(r, "at")
			b, _ := json.Marshal(r)
			v = string(b)
		}
		out[e.Key()] = outputEntry{v, e.Revision()}
	}
	m.t.Fatalf("%s: the watch ended before every key was read", bucket)
	return nil
}

// nodeOutputs is every key of node in the three output buckets, by
// bucket, values alone.
func (m *mesh) nodeOutputs(node string) map[string]map[string]string {
	m.t.Helper()
	out := map[string]map[string]string{}
	for _, b := range outputBuckets {
		out[b] = map[string]string{}
		for k, e := range m.outputsOf(b, node) {
			out[b][k] = e.value
		}
	}
	return out
}

// sameOutputs says how got differs from want; "" when it does not.
func sameOutputs(got, want map[string]map[string]string) string {
	var diffs []string
	for _, b := range outputBuckets {
		for _, k := range slices.Sorted(maps.Keys(want[b])) {
			if v, ok := got[b][k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s missing", b, k))
			} else if v != want[b][k] {
				diffs = append(diffs, fmt.Sprintf("%s %s is %s, was %s", b, k, v, want[b][k]))
			}
		}
		for k := range got[b] {
			if _, ok := want[b][k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %s was not there", b, k))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

// waitOutputs waits until node's keys are want again, and says how long
// that took.
func (m *mesh) waitOutputs(node string, want map[string]map[string]string) time.Duration {
	m.t.Helper()
	t0 := time.Now()
	bustest.Eventually(m.t, 15*time.Second, func() error {
		if d := sameOutputs(m.nodeOutputs(node), want); d != "" {
			return fmt.Errorf("%v after the loss: %s", time.Since(t0).Round(time.Millisecond), d)
		}
		return nil
	})
	return time.Since(t0)
}

// disk is every file under the fill root: its bytes' sum, mode and mtime.
func (m *mesh) disk() map[string]string {
	m.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(m.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%x %v %d", sha256.Sum256(b), st.Mode(), st.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return out
}

// filled counts the files mesh-fill wrote or removed (its log says each).
func (f *stateFill) filled() int {
	s := f.log.String()
	return strings.Count(s, `"action":"written"`) + strings.Count(s, `"action":"removed"`)
}

// remakeOutputs makes the three output buckets again, empty, as the server
// does when one is deleted.
func (m *mesh) remakeOutputs() {
	m.t.Helper()
	if err := srv.EnsureBuckets(context.Background(), m.js, 1); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mesh) deleteOutputs() {
	m.t.Helper()
	for _, b := range outputBuckets {
		if err := m.js.DeleteKeyValue(context.Background(), b); err != nil {
			m.t.Fatal(err)
		}
	}
}

// (a) The three output buckets deleted and made again empty: first at once,
// other nodes writing into them before ace looks (only the streams'
// creation time tells), then seconds later (ace's looks find them gone
// meanwhile). Each time every key ace wrote is back with the same content
// within a few refills, and nothing is filled again on disk.
func TestOutputBucketsDeletedAndMadeAgainAreWrittenAgain(t *testing.T) {
	m, f := outputsMesh(t)
	want := m.nodeOutputs("ace")
	for _, b := range outputBuckets {
		if len(want[b]) == 0 {
			t.Fatalf("ace wrote nothing in %s", b)
		}
	}
	disk, filled, restarts := m.disk(), f.filled(), f.programRestarts()
	time.Sleep(3 * outputsRefill)
	if strings.Contains(m.logs.String(), lostOutputsLog) {
		t.Fatalf("output buckets taken as lost while nothing touched them:\n%s", m.logs.String())
	}

	m.deleteOutputs()
	m.remakeOutputs()
	others := map[string]string{ // bob's keys, so no bucket is empty
		spec.NeedsBucket:   spec.EncodeKey("bob", "web", "config", "model"),
		spec.AppliedBucket: spec.EncodeKey("bob", "web"),
		spec.CollectBucket: zshKey("bob", "alpha"),
	}
	for b, k := range others {
		m.put(b, k, `{}`)
	}
	took := m.waitOutputs("ace", want)
	t.Logf("made again at once: ace's %d needs, %d reports and %d items back after %v",
		len(want[spec.NeedsBucket]), len(want[spec.AppliedBucket]), len(want[spec.CollectBucket]), took)
	for b, k := range others {
		if _, ok := m.get(b, k); !ok {
			t.Errorf("%s %s, another node's, is gone", b, k)
		}
	}

	m.deleteOutputs()
	time.Sleep(3 * outputsRefill) // looks that find the buckets gone
	m.remakeOutputs()
	took = m.waitOutputs("ace", want)
	t.Logf("made again %v later: back after %v", 3*outputsRefill, took)

	m.settle()
	if got := m.disk(); !maps.Equal(got, disk) {
		t.Errorf("files changed on disk:\nbefore %v\nafter  %v", disk, got)
	}
	if n := f.filled() - filled; n != 0 {
		t.Errorf("mesh-fill wrote or removed %d files:\n%s", n, f.log.String())
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("programs restarted: %q, then %q", restarts, got)
	}
	if s := m.logs.String(); !strings.Contains(s, lostOutputsLog) {
		t.Errorf("no line says the output buckets were lost:\n%s", s)
	}
}

// (b) The applied bucket purged whole (the stream's purge: no marker
// left) → ace's reports are back, the same but for "at", within a few
// refills; the needs and items still there are not put again (adopted by
// the sweep), and nothing is filled again on disk.
func TestAnAppliedBucketPurgedWholeHasItsReportsWrittenAgain(t *testing.T) {
	m, f := outputsMesh(t)
	want := m.nodeOutputs("ace")
	needs, items := m.outputsOf(spec.NeedsBucket, "ace"), m.outputsOf(spec.CollectBucket, "ace")
	disk, filled := m.disk(), f.filled()

	m.streamPurge(spec.AppliedBucket)
	if got := m.outputsOf(spec.AppliedBucket, "ace"); len(got) != 0 {
		t.Fatalf("reports left after the purge: %v", got)
	}
	took := m.waitOutputs("ace", want)
	t.Logf("ace's %d reports back after %v", len(want[spec.AppliedBucket]), took)

	m.settle()
	if got := m.outputsOf(spec.NeedsBucket, "ace"); !maps.Equal(got, needs) {
		t.Errorf("needs put again though they stood:\nbefore %v\nafter  %v", needs, got)
	}
	if got := m.outputsOf(spec.CollectBucket, "ace"); !maps.Equal(got, items) {
		t.Errorf("items put again though they stood:\nbefore %v\nafter  %v", items, got)
	}
	if got := m.disk(); !maps.Equal(got, disk) {
		t.Errorf("files changed on disk:\nbefore %v\nafter  %v", disk, got)
	}
	if n := f.filled() - filled; n != 0 {
		t.Errorf("mesh-fill wrote or removed %d files:\n%s", n, f.log.String())
	}
	if s := m.logs.String(); !strings.Contains(s, lostOutputsLog) || !strings.Contains(s, spec.AppliedBucket) {
		t.Errorf("no line says the applied bucket was lost:\n%s", s)
	}
}

// (b) in a fleet: the applied bucket purged whole under two clients whose
// refill ticks come half a refill apart, each having looked since it last
// wrote. The first to look finds the bucket empty and writes its reports
// again; the other then finds it holding those, but every message that
// stood at its last look gone, its own with them: its reports are back
// too.
func TestAnAppliedBucketPurgedWholeHasEveryNodesReportsWrittenAgain(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.assign("bob", "mail", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/mail/conf", Template: "conf"}}},
		map[string]string{"conf": "relay = none\n"})
	const refill = 1 * time.Second
	m.client("ace", refillEvery(refill))
	time.Sleep(refill / 2)
	m.client("bob", refillEvery(refill))
	m.waitState("ace", "web", "applied")
	m.waitState("bob", "mail", "applied")
	m.settle()
	time.Sleep(refill * 3 / 2) // each has looked since it wrote
	ace, bob := m.nodeOutputs("ace"), m.nodeOutputs("bob")

	m.streamPurge(spec.AppliedBucket)
	m.waitOutputs("ace", ace)
	m.waitOutputs("bob", bob)
}

// The look at the output buckets is a stream info request on each, which
// the example configuration lets provisioner-ace make (SPEC §2.3: it holds
// them to open its buckets at all): under it, a report purged is put back
// too, with no permission refused.
func TestAnAppliedBucketPurgedIsWrittenAgainUnderTheExamplePermissions(t *testing.T) {
	m := exampleBus(t)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/web/conf", Template: "conf"}}},
		map[string]string{"conf": "port 80\n"})
	m.client("ace", asUser("provisioner-ace"), refillEvery(outputsRefill))
	m.waitState("ace", "web", "applied")
	m.settle()
	want := m.nodeOutputs("ace")

	m.streamPurge(spec.AppliedBucket)
	m.waitOutputs("ace", want)
	if s := m.logs.String(); !strings.Contains(s, lostOutputsLog) || strings.Contains(s, "Permissions Violation") {
		t.Errorf("log: %s", s)
	}
}

// streamPurge purges bucket's stream whole, as `nats stream purge` does.
func (m *mesh) streamPurge(bucket string) {
	m.t.Helper()
	st, err := m.js.Stream(context.Background(), "KV_"+bucket)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		m.t.Fatal(err)
	}
}
