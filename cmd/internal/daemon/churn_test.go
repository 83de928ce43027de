package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// churnPlan is a module writing /etc/<name>/conf from template "t".
func churnPlan(name string) nodes.Plan {
	return nodes.Plan{
		Files:     []nodes.FileSpec{{Path: "/etc/" + name + "/conf", Template: "t"}},
		Placement: map[string]map[string]string{"dir": {"state": "/var/lib/" + name}},
	}
}

// churnTemplates is revision rev of a module's templates: the same rev
// gives the same archive (m.assign's tar.gz is byte for byte the same),
// and so the same digest.
func churnTemplates(rev string) map[string]string {
	return map[string]string{"t": "d=${dir:state} rev=" + rev + "\n"}
}

// cacheOf is the name of the client's cache file for templates: the
// digest of the archive m.assign writes for them.
func cacheOf(t *testing.T, templates map[string]string) string {
	t.Helper()
	members := map[string][]byte{}
	for n, text := range templates {
		members[n] = []byte(text)
	}
	_, digest, err := scale.TarGz(members)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(digest, "sha256:") + ".tar"
}

// waitCache waits until the client's templates cache under state holds
// exactly the archives want names.
func waitCache(t *testing.T, state string, want ...string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	want = slices.Compact(want)
	bustest.Eventually(t, 10*time.Second, func() error {
		entries, err := os.ReadDir(filepath.Join(state, "templates"))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("the client's cache holds %d archives %v, want %d %v", len(got), got, len(want), want)
		}
		return nil
	})
}

// F1 (audit): every templates archive the client ever read stayed on its
// disk (and in its memory). A module moved to a new archive N times, and
// modules assigned and taken off, leave in the client's state dir the
// archives the current plans name, and nothing else; an archive two plans
// name stays while one of them does; a module moved back to an earlier
// archive is filled from it again.
func TestChurnLeavesOnlyTheArchivesThePlansNameInTheStateDir(t *testing.T) {
	m := newMesh(t)
	state := t.TempDir()
	m.client("ace", func(c *Config) { c.StateDir = state })
	rev := func(i int) string { return fmt.Sprint("r", i) }
	m.assign("ace", "base", churnPlan("base"), churnTemplates(rev(0)))
	m.waitFile("/etc/base/conf", "d=/var/lib/base rev=r0\n")
	waitCache(t, state, cacheOf(t, churnTemplates(rev(0))))

	const n = 8
	for i := 1; i <= n; i++ {
		// base's plan moves to a new archive (a rollout) ...
		m.assign("ace", "base", churnPlan("base"), churnTemplates(rev(i)))
		m.waitFile("/etc/base/conf", fmt.Sprintf("d=/var/lib/base rev=%s\n", rev(i)))
		// ... and a module comes, with an archive of its own, and goes.
		name := fmt.Sprint("visitor-", i)
		visitor := churnTemplates("visitor " + name)
		m.assign("ace", name, churnPlan(name), visitor)
		m.waitFile("/etc/"+name+"/conf", fmt.Sprintf("d=/var/lib/%s rev=visitor %s\n", name, name))
		waitCache(t, state, cacheOf(t, churnTemplates(rev(i))), cacheOf(t, visitor))
		m.del(spec.AssignmentsBucket, spec.EncodeKey("ace", name))
		waitCache(t, state, cacheOf(t, churnTemplates(rev(i))))
	}

	// Two plans name one archive: it stays while either does.
	shared := churnTemplates("shared")
	m.assign("ace", "twin-a", churnPlan("twin-a"), shared)
	m.assign("ace", "twin-b", churnPlan("twin-b"), shared)
	m.waitFile("/etc/twin-a/conf", "d=/var/lib/twin-a rev=shared\n")
	m.waitFile("/etc/twin-b/conf", "d=/var/lib/twin-b rev=shared\n")
	waitCache(t, state, cacheOf(t, churnTemplates(rev(n))), cacheOf(t, shared))
	m.del(spec.AssignmentsBucket, spec.EncodeKey("ace", "twin-a"))
	bustest.Eventually(t, 10*time.Second, func() error { // taken off: mesh-fill removed its file
		if _, _, err := m.file("/etc/twin-a/conf"); !os.IsNotExist(err) {
			return fmt.Errorf("twin-a's file is still there (%v)", err)
		}
		return nil
	})
	m.settle()
	waitCache(t, state, cacheOf(t, churnTemplates(rev(n))), cacheOf(t, shared))
	m.del(spec.AssignmentsBucket, spec.EncodeKey("ace", "twin-b"))
	waitCache(t, state, cacheOf(t, churnTemplates(rev(n))))

	// base back to its first archive: fetched again, and filled from it.
	m.assign("ace", "base", churnPlan("base"), churnTemplates(rev(0)))
	m.waitFile("/etc/base/conf", "d=/var/lib/base rev=r0\n")
	waitCache(t, state, cacheOf(t, churnTemplates(rev(0))))
	m.assign("ace", "base", churnPlan("base"), churnTemplates(rev(1)))
	m.waitFile("/etc/base/conf", "d=/var/lib/base rev=r1\n")
	waitCache(t, state, cacheOf(t, churnTemplates(rev(1))))
	m.settle()
	if r := m.waitState("ace", "base", "applied"); r == nil {
		t.Fatal("no report")
	}
}

// F1 (d): a restart finds in the cache what an earlier run kept. Archives
// no plan names any more are removed once the plans are read; the one a
// plan still names is used from the cache (its source is gone: it cannot
// be fetched again) and stays.
func TestChurnArchivesAnEarlierRunCachedAreRemovedOnceThePlansAreRead(t *testing.T) {
	m := newMesh(t)
	state := t.TempDir()
	_, stop := m.startClient("ace", func(c *Config) { c.StateDir = state })
	current := churnTemplates("current")
	m.assign("ace", "base", churnPlan("base"), current)
	m.waitFile("/etc/base/conf", "d=/var/lib/base rev=current\n")
	waitCache(t, state, cacheOf(t, current))
	m.settle()
	stop()

	// What an earlier run left: archives of plans gone since.
	tdir := filepath.Join(state, "templates")
	var stale []string
	for i := range 3 {
		tmpl := churnTemplates(fmt.Sprint("gone ", i))
		members := map[string][]byte{"t": []byte(tmpl["t"])}
		data, _, err := scale.TarGz(members)
		if err != nil {
			t.Fatal(err)
		}
		name := cacheOf(t, tmpl)
		if err := os.WriteFile(filepath.Join(tdir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, name)
	}
	waitCache(t, state, append(stale, cacheOf(t, current))...) // planted
	// base's archive is in the cache alone now.
	if err := os.Remove(filepath.Join(m.tmpl, "ace-base.tar.gz")); err != nil {
		t.Fatal(err)
	}
	from := m.fills.count()
	m.client("ace", func(c *Config) { c.StateDir = state })
	bustest.Eventually(t, 10*time.Second, func() error {
		if !slices.Contains(m.fills.since(from), "/etc/base/conf") {
			return fmt.Errorf("base not filled since the restart (its archive is in the cache alone)")
		}
		return nil
	})
	waitCache(t, state, cacheOf(t, current))
	m.settle()
	if r := m.waitState("ace", "base", "applied"); r == nil {
		t.Fatal("no report")
	}
}

// The asker forgets a name it
// got a sealed answer for once Retain's keep refuses it. A module moving
// to a new templates archive keeps its secret's value while the archive is
// fetched (no file reads it for the moment: WantsSecret says no), and the
// value is used again without asking once the archive is there. Such a
// name must not be forgotten, or the reconnect's Reask would not ask for
// it, and a rotation announced while the bus was away would never reach
// its file. The daemon's keep says yes to a name held (HoldsSecret).
func TestChurnASecretHeldBetweenArchivesIsStillReaskedOnReconnect(t *testing.T) {
	m := newMesh(t)
	v := m.devVault()
	name := "own/base/s"
	path := m.secretBetweenArchives(v)
	// The asker looks at every name answered for good when a sample of
	// them says something left, or else once a second: past that second,
	// a batch makes sure it has looked.
	time.Sleep(1500 * time.Millisecond)
	m.put(spec.ConfigBucket, "ace.other.k", "a batch")
	m.settle()
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/base/conf", "later s=v1\n") // the value held: not asked again
	m.settle()

	// Asked again once the bus is back: a rotation announced while it was
	// away reaches the file.
	asked := v.AskCount(name)
	m.busDown()
	m.busUp()
	bustest.Eventually(t, 15*time.Second, func() error {
		if v.AskCount(name) == asked {
			return fmt.Errorf("%s not asked again since the bus came back", name)
		}
		return nil
	})
}

// A secret held between two archives when the bus goes away, rotated while
// it is away (its secret-changed lost): SPEC §4.2 r2 asks again for every
// name held, so when the new archive lands its file has the new value, not
// the one held from before.
func TestASecretHeldBetweenArchivesWhileTheBusWasAwayIsAskedAgainWhenReadAgain(t *testing.T) {
	m := newMesh(t)
	v, vc := m.reconnectingVault()
	name := "own/base/s"
	path := m.secretBetweenArchives(v)
	m.settle()

	const back = "the bus is back"
	backs := strings.Count(m.logs.String(), back)
	m.busDown()
	bustest.Eventually(t, 10*time.Second, func() error {
		if !vc.IsReconnecting() {
			return fmt.Errorf("vault's connection %v", vc.Status())
		}
		return nil
	})
	v.Set(t.Context(), name, []byte("v2")) // its secret-changed is lost
	m.busUp()
	bustest.Eventually(t, 15*time.Second, func() error {
		if strings.Count(m.logs.String(), back) == backs {
			return fmt.Errorf("the client has not seen the bus come back")
		}
		if !vc.IsConnected() {
			return fmt.Errorf("the vault is not back")
		}
		return vc.Flush()
	})
	m.settle()
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/base/conf", "later s=v2\n")
}

// secretBetweenArchives makes module base read own/base/s (v1 in v) from a
// first archive, then moves its plan to an archive not there yet (moved
// away to path+".away"): between archives, its secret is held and read by
// no file. It returns the new archive's path.
func (m *mesh) secretBetweenArchives(v *devvault.Vault) string {
	m.t.Helper()
	v.Set(m.t.Context(), "own/base/s", []byte("v1"))
	p := churnPlan("base")
	p.Secrets = []nodes.SecretSpec{{Name: "s"}}
	m.assign("ace", "base", p, map[string]string{"t": "s=${secret:s}\n"})
	m.client("ace", func(c *Config) { c.ReaskSpread = 50 * time.Millisecond })
	m.waitFile("/etc/base/conf", "s=v1\n")

	ref, digest := m.archive("base-later", map[string]string{"t": "later s=${secret:s}\n"})
	path := strings.TrimPrefix(ref, "file://")
	if err := os.Rename(path, path+".away"); err != nil {
		m.t.Fatal(err)
	}
	p.Templates.Ref, p.Templates.Digest = ref, digest
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "base", Provisioning: p})
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", "base"), string(b))
	m.waitState("ace", "base", "waiting")
	return path
}
