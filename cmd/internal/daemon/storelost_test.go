package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// busUpEmpty starts m's server again on its port with a JetStream store
// of its own, empty: a bus whose store was lost (a disk replaced, a
// server reinstalled). No bucket is there until someone makes it.
func (m *mesh) busUpEmpty() {
	m.t.Helper()
	dir := m.t.TempDir()
	m.s = bustest.Start(m.t, m.again, func(o *server.Options) { o.StoreDir = dir })
	m.connect()
}

// webKeptWhileTheBusComesBack fills web on a client of a mesh-fill that
// keeps its state, takes the bus down and brings it back by up, waits
// for the client to log said, and checks a second later that web's file
// is as it was while (what the bus lacked) held.
func (m *mesh) webKeptWhileTheBusComesBack(up func(), said, while string) {
	m.t.Helper()
	f := m.stateFill()
	m.webModule()
	m.client("ace", f.socket)
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")

	m.busDown()
	up()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if !contains(m.logs.String(), said) {
			return fmt.Errorf("the client has not logged %q", said)
		}
		return nil
	})
	time.Sleep(time.Second)
	if got, _, err := m.file("/etc/web/a.conf"); err != nil || got != "model = opus\nport = 8080\n" {
		m.t.Fatalf("a.conf %q (%v) while %s", got, err, while)
	}
}

// A bus that comes back with its store lost holds no bucket: the client
// waits for them (SPEC §2.2) and removes nothing meanwhile; once they are
// made again and the inputs written again, it fills from them (§4.7) and
// writes its report and needs into the new buckets.
func TestABusBackWithItsStoreLostIsWaitedForThenFilledAndReportedAgain(t *testing.T) {
	m := newMesh(t)
	m.webKeptWhileTheBusComesBack(m.busUpEmpty,
		"every module is kept as it is until the assignments bucket can be read again", "the buckets were missing")

	provisionBus(t, m.js, 1)
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	m.assign("ace", "web", webPlan(), webTemplates)
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	bustest.Eventually(t, 10*time.Second, func() error {
		need, ok := m.get(spec.NeedsBucket, "ace.web.config.model")
		if !ok || !contains(need, `"state":"met"`) {
			return fmt.Errorf("need of model %q (present %v)", need, ok)
		}
		return nil
	})
}

// The inputs and the registry back before the client's own output
// buckets (the operator's tools ran first, the buckets made later): the
// file is filled, and the report and needs it could not write land once
// the buckets are made, without a further change.
func TestReportsAndNeedsNotWrittenForWantOfTheirBucketsLandOnceTheyAreMade(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")

	m.busDown()
	m.busUpEmpty()
	for _, b := range []string{spec.AssignmentsBucket, spec.ConfigBucket} {
		m.bucket(b)
	}
	reg := m.bucket(spec.RegistryBucket)
	if _, _, err := srv.PublishRegistry(t.Context(), reg, srv.Registry()); err != nil {
		t.Fatal(err)
	}
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	m.assign("ace", "web", webPlan(), webTemplates)
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	time.Sleep(time.Second)

	provisionBus(t, m.js, 1)
	m.waitState("ace", "web", "applied")
	bustest.Eventually(t, 10*time.Second, func() error {
		need, ok := m.get(spec.NeedsBucket, "ace.web.config.model")
		if !ok || !contains(need, `"state":"met"`) {
			return fmt.Errorf("need of model %q (present %v)", need, ok)
		}
		return nil
	})
}

// busUpWithoutJetStream starts m's server again on its port with
// JetStream off: core NATS answers, no stream does. (Switching JetStream
// off and on in a running server, DisableJetStream and EnableJetStream,
// races inside nats-server under -race.)
func (m *mesh) busUpWithoutJetStream() {
	m.t.Helper()
	m.s = bustest.Start(m.t, m.again, func(o *server.Options) { o.JetStream = false })
	m.connect()
}

// The bus back without JetStream for a while (core NATS up, every
// JetStream request failing), then with it on its store: the client
// removes and reports nothing meanwhile, and once JetStream is back a
// value changed is filled and reported.
func TestJetStreamAwayWhileCoreNATSIsUpIsWaitedForThenFollowed(t *testing.T) {
	m := newMesh(t)
	m.webKeptWhileTheBusComesBack(m.busUpWithoutJetStream,
		"the bus is back: reading every input again", "JetStream was away")
	m.busDown()
	m.busUp()
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.waitFileFor("/etc/web/a.conf", "model = haiku\nport = 8080\n", 15*time.Second)
	r := m.waitState("ace", "web", "applied")
	if b, _ := json.Marshal(r); !contains(string(b), "sha256:") {
		t.Fatalf("report %s", b)
	}
}

// A provider's _bound bucket deleted and made again while the client
// runs: the consumer waits for it, then fills from the new bucket's entry.
func TestABoundBucketDeletedAndMadeAgainIsWaitedForThenFilledFrom(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"https://forge"}}`)
	m.boundConsumer()
	m.client("ace")
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\nurl = https://forge\n")
	m.waitState("ace", "cc", "applied")

	if err := m.js.DeleteKeyValue(t.Context(), "gitea_bound"); err != nil {
		t.Fatal(err)
	}
	m.waitWaiting("ace", "cc", "gitea_bound")
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"https://forge2"}}`)
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\nurl = https://forge2\n")
	m.waitState("ace", "cc", "applied")
}

// The registry bucket deleted and made again by the server (it makes its
// buckets and publishes the registry at start): a module reading a kind
// of it waits meanwhile, and fills once the registry is back.
func TestARegistryDeletedAndPublishedAgainIsWaitedForThenFilledFrom(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")

	if err := m.js.DeleteKeyValue(t.Context(), spec.RegistryBucket); err != nil {
		t.Fatal(err)
	}
	m.waitWaiting("ace", "web", spec.RegistryBucket)
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	time.Sleep(300 * time.Millisecond)
	if got, _, _ := m.file("/etc/web/a.conf"); got != "model = opus\nport = 8080\n" {
		t.Fatalf("a.conf %q filled while the registry was missing", got)
	}
	provisionBus(t, m.js, 1)
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

// The assignments stream purged whole is the bucket emptied, as one made
// again empty (held_test.go): the controller's word that nothing is
// assigned. Every module goes, its files removed by the node-engine and
// its report deleted, with the warning that several went at once; a
// module assigned again is filled again.
func TestAnAssignmentsStreamPurgedTakesItsModulesOffWithAWarning(t *testing.T) {
	m := newMesh(t)
	m.webAndNotesTakenOffAtOnce(func() {
		st, err := m.js.Stream(t.Context(), "KV_"+spec.AssignmentsBucket)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Purge(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	m.notesModule()
	m.waitState("ace", "notes", "applied")
	if !m.onDisk("/etc/notes/n.conf") {
		t.Fatal("notes assigned again but its file is not there")
	}
}

// The store lost and every input written back as it was, the client's own
// buckets made a while after the inputs: nothing the client fills
// changed, yet every report, need and item it had written is written
// again into the new buckets (nothing of the node's keys is lost for good).
func TestAStoreLostAndItsInputsWrittenBackAsTheyWereGetsEveryKeyWrittenAgain(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.contribute("ace", "alpha", "a\n")
	m.collector("ace", "zsh")
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "alpha", "applied")
	m.settle()
	item := spec.EncodeKey("ace", zshColl, "alpha")
	wantItem, _ := m.get(spec.CollectBucket, item)
	if wantItem == "" {
		t.Fatal("no item of alpha before the store was lost")
	}

	m.busDown()
	m.busUpEmpty()
	for _, b := range []string{spec.AssignmentsBucket, spec.ConfigBucket} {
		m.bucket(b)
	}
	reg := m.bucket(spec.RegistryBucket)
	if _, _, err := srv.PublishRegistry(t.Context(), reg, srv.Registry()); err != nil {
		t.Fatal(err)
	}
	m.webModule()
	m.contribute("ace", "alpha", "a\n")
	m.collector("ace", "zsh")
	time.Sleep(time.Second)
	provisionBus(t, m.js, 1)

	for _, mod := range []string{"web", "zsh", "alpha"} {
		m.waitState("ace", mod, "applied")
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if v, ok := m.get(spec.CollectBucket, item); !ok || v != wantItem {
			return fmt.Errorf("item %q (present %v), want %q", v, ok, wantItem)
		}
		need, ok := m.get(spec.NeedsBucket, "ace.web.config.model")
		if !ok || !contains(need, `"state":"met"`) {
			return fmt.Errorf("need of model %q (present %v)", need, ok)
		}
		return nil
	})
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\na\n")
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
}

// A module taken off while mesh-fill is down and assigned again (with a
// new value) before it is back: the removal not answered is not made
// after the module's fill, which would leave the module applied with no
// file; the file holds the new value once mesh-fill is back, and stays.
func TestAModuleBackBeforeItsRemovalWasAnsweredKeepsItsFile(t *testing.T) {
	m, f := filledWeb(t)
	f.stop()
	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitGone(spec.AppliedBucket, "ace.web")
	bustest.Eventually(t, 10*time.Second, func() error {
		if !contains(m.logs.String(), "did not remove the module's files") {
			return fmt.Errorf("the removal was not tried")
		}
		return nil
	})
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=2\n"})
	m.waitState("ace", "web", "failed")
	f.start()
	m.waitFile("/etc/web.conf", "port=2\n")
	m.waitState("ace", "web", "applied")
	time.Sleep(500 * time.Millisecond) // five retry ticks
	if got, _, err := m.file("/etc/web.conf"); err != nil || got != "port=2\n" {
		t.Fatalf("web.conf %q (%v) after mesh-fill came back", got, err)
	}
}
