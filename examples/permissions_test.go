package examples

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

const (
	assignmentsBucket = spec.AssignmentsBucket
	registryBucket    = spec.RegistryBucket
	needsBucket       = spec.NeedsBucket
	appliedBucket     = spec.AppliedBucket
	collectBucket     = spec.CollectBucket
	configBucket      = spec.ConfigBucket
	giteaBound        = "gitea_bound"
	artifacts         = spec.ArtifactsStore
)

// ownBuckets are the buckets a client writes under its own <node>.
var ownBuckets = []string{needsBucket, appliedBucket, collectBucket}

// meshBus is the example bus (startBus) loaded with the example mesh,
// each part written by the user that owns it in a real mesh.
type meshBus struct {
	s     *server.Server
	mesh  *Mesh
	vault *devvault.Vault
}

func loadBus(t *testing.T, mode string) *meshBus {
	t.Helper()
	s := startBus(t, mode)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := LoadMesh(meshFS())
	if err != nil {
		t.Fatal(err)
	}

	// The lab makes the buckets of the other domains (SPEC §2.2).
	lab := connect(t, s, "lab")
	for _, b := range []string{assignmentsBucket, configBucket, giteaBound} {
		if _, err := lab.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b}); err != nil {
			t.Fatalf("lab: creating bucket %s: %v", b, err)
		}
	}
	if _, err := lab.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: artifacts}); err != nil {
		t.Fatalf("lab: creating object store %s: %v", artifacts, err)
	}

	// The server makes its own four and writes the registry.
	mp := connect(t, s, "mesh-provisioner")
	for _, b := range []string{registryBucket, needsBucket, appliedBucket, collectBucket} {
		if _, err := mp.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b}); err != nil {
			t.Fatalf("mesh-provisioner: creating bucket %s: %v", b, err)
		}
	}
	put(t, ctx, mp, registryBucket, "config",
		`{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`)
	mp.clean(t)

	// The controller publishes templates archives and assignments.
	ctl := connect(t, s, "mesh-controller")
	obs, err := ctl.js.ObjectStore(ctx, artifacts)
	if err != nil {
		t.Fatalf("mesh-controller: opening %s: %v", artifacts, err)
	}
	for key := range m.Assignments {
		toks, err := spec.DecodeKey(key, 2)
		if err != nil {
			t.Fatalf("assignment %s: %v", key, err)
		}
		data, digest, err := m.Archive(toks[1])
		if err != nil {
			t.Fatal(err)
		}
		name := toks[1] + ".tar.gz"
		if _, err := obs.PutBytes(ctx, name, data); err != nil {
			t.Fatalf("mesh-controller: putting %s in %s: %v", name, artifacts, err)
		}
		a, err := m.WithTemplates(key, "obj://"+artifacts+"/"+name, digest)
		if err != nil {
			t.Fatal(err)
		}
		put(t, ctx, ctl, assignmentsBucket, key, string(a))
	}
	ctl.clean(t)

	cfg := connect(t, s, "mesh-config")
	for k, v := range m.Config {
		put(t, ctx, cfg, configBucket, k, v)
	}
	cfg.clean(t)

	gitea := connect(t, s, "gitea")
	for k, v := range m.Bound[giteaBound] {
		put(t, ctx, gitea, giteaBound, k, string(v))
	}
	gitea.clean(t)

	// g14's client has keys of its own, which ace's must not reach.
	g14 := connect(t, s, "provisioner-g14")
	put(t, ctx, g14, needsBucket, "g14.claude-code.config.model", `{"state":"met"}`)
	put(t, ctx, g14, appliedBucket, "g14.claude-code", `{"state":"applied"}`)
	put(t, ctx, g14, collectBucket, "g14.shell=3Azsh=3Anormal.claude-code", `{"item":"x"}`)
	g14.clean(t)

	// The dev vault answers as the mesh-vault user.
	vu := connect(t, s, "mesh-vault")
	v := devvault.New(zerolog.Nop())
	for name, value := range m.Secrets {
		v.Set(ctx, name, []byte(value))
	}
	if err := v.Start(vu.nc, vu.js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)

	// ace's client answers its tool runner.
	ace := connect(t, s, "provisioner-ace")
	if _, err := ace.nc.Subscribe("prov.ask.ace", func(msg *nats.Msg) {
		_ = msg.Respond([]byte(`{"value":"claude-sonnet"}`))
	}); err != nil {
		t.Fatal(err)
	}
	ace.clean(t)
	return &meshBus{s: s, mesh: m, vault: v}
}

func put(t *testing.T, ctx context.Context, u *user, bucket, key, value string) {
	t.Helper()
	kv := u.kv(t, ctx, bucket)
	if _, err := kv.PutString(ctx, key, value); err != nil {
		t.Fatalf("%s: putting %s of %s: %v", u.name, key, bucket, err)
	}
}

// TestClientRights: with the rights of nodes/spec (config and JWT users),
// the client user provisioner-ace can do everything SPEC §2.2 and §2.3
// give it, and is refused nothing.
func TestClientRights(t *testing.T) { forEachBus(t, testClientRights) }

func testClientRights(t *testing.T, mode string) {
	b := loadBus(t, mode)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("reads every assignment", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		kv := ace.kv(t, ctx, assignmentsBucket)
		keys := watchSnapshot(t, kv, ">")
		slices.Sort(keys)
		want := slices.Sorted(maps.Keys(b.mesh.Assignments))
		if !slices.Equal(keys, want) {
			t.Errorf("watching the whole assignments bucket gave %q, want %q", keys, want)
		}
		if _, err := kv.Get(ctx, "g14.claude-code"); err != nil {
			t.Errorf("getting another node's assignment (a consumer of a provider may sit anywhere): %v", err)
		}
		ace.clean(t)
	})

	t.Run("reads the registry", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		kv := ace.kv(t, ctx, registryBucket)
		if keys := watchSnapshot(t, kv, ">"); !slices.Equal(keys, []string{"config"}) {
			t.Errorf("registry keys %q, want [config]", keys)
		}
		if _, err := kv.Get(ctx, "config"); err != nil {
			t.Errorf("getting registry entry config: %v", err)
		}
		ace.clean(t)
	})

	t.Run("reads its own config and bindings", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		cfg := ace.kv(t, ctx, configBucket)
		keys := watchSnapshot(t, cfg, "ace.>")
		slices.Sort(keys)
		var want []string
		for k := range b.mesh.Config {
			if k[:4] == "ace." {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("watching ace.> of %s gave %q, want %q", configBucket, keys, want)
		}
		e, err := cfg.Get(ctx, "ace.claude-code.model")
		if err != nil {
			t.Fatalf("getting ace.claude-code.model: %v", err)
		}
		if got := string(e.Value()); got != b.mesh.Config["ace.claude-code.model"] {
			t.Errorf("ace.claude-code.model = %q, want %q", got, b.mesh.Config["ace.claude-code.model"])
		}
		bound := ace.kv(t, ctx, giteaBound)
		bkeys := watchSnapshot(t, bound, "ace.>")
		slices.Sort(bkeys) // in the order they were put, from a map
		if keys := bkeys; !slices.Equal(keys, []string{"ace.claude-code.forge-account", "ace.claude-code.gitea-read"}) {
			t.Errorf("watching ace.> of %s gave %q", giteaBound, keys)
		}
		if _, err := bound.Get(ctx, "ace.claude-code.gitea-read"); err != nil {
			t.Errorf("getting its own binding: %v", err)
		}
		ace.clean(t)
	})

	t.Run("writes, reads and deletes its own keys", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		for _, bucket := range ownBuckets {
			kv := ace.kv(t, ctx, bucket)
			key := "ace.claude-code.check"
			if _, err := kv.PutString(ctx, key, `{"state":"waiting"}`); err != nil {
				t.Fatalf("putting %s of %s: %v", key, bucket, err)
			}
			if e, err := kv.Get(ctx, key); err != nil || string(e.Value()) != `{"state":"waiting"}` {
				t.Fatalf("getting %s of %s back: %v", key, bucket, err)
			}
			if keys := watchSnapshot(t, kv, "ace.>"); !slices.Equal(keys, []string{key}) {
				t.Errorf("watching ace.> of %s gave %q, want only %s", bucket, keys, key)
			}
			if err := kv.Delete(ctx, key); err != nil {
				t.Fatalf("deleting %s of %s: %v", key, bucket, err)
			}
			if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Errorf("%s of %s after delete: %v, want not found", key, bucket, err)
			}
			if err := kv.Purge(ctx, key); err != nil {
				t.Errorf("purging %s of %s: %v", key, bucket, err)
			}
		}
		ace.clean(t)
	})

	t.Run("fetches templates archives", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		obs, err := ace.js.ObjectStore(ctx, artifacts)
		if err != nil {
			t.Fatalf("opening %s: %v", artifacts, err)
		}
		got, err := obs.GetBytes(ctx, "claude-code.tar.gz")
		if err != nil {
			t.Fatalf("getting claude-code.tar.gz: %v", err)
		}
		want, _, _ := b.mesh.Archive("claude-code")
		if !bytes.Equal(got, want) {
			t.Errorf("claude-code.tar.gz: got %d bytes, not the %d put", len(got), len(want))
		}
		ace.clean(t)
	})

	t.Run("asks the vault in its own name and hears rotations", func(t *testing.T) {
		ace := connect(t, b.s, "provisioner-ace")
		changed, err := ace.nc.SubscribeSync("mesh-vault.secret-changed")
		if err != nil {
			t.Fatal(err)
		}
		keys, err := vault.NewKeys()
		if err != nil {
			t.Fatal(err)
		}
		c := vault.Client{NC: ace.nc, Node: "ace", Keys: keys, Timeout: 5 * time.Second}
		r := c.Ask(ctx, "own/claude-code/api-key", "claude-code")
		if r.Outcome != vault.Sealed || string(r.Value) != b.mesh.Secrets["own/claude-code/api-key"] {
			t.Fatalf("asking for own/claude-code/api-key as ace: %v", r)
		}
		b.vault.Set(ctx, "own/claude-code/api-key", []byte(b.mesh.Secrets["own/claude-code/api-key"]))
		if _, err := changed.NextMsg(5 * time.Second); err != nil {
			t.Errorf("no mesh-vault.secret-changed after a rotation: %v", err)
		}
		ace.clean(t)
	})

	t.Run("publishes reports and changes", func(t *testing.T) {
		lab := connect(t, b.s, "lab")
		events, err := lab.nc.SubscribeSync("prov.>")
		if err != nil {
			t.Fatal(err)
		}
		if err := lab.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		ace := connect(t, b.s, "provisioner-ace")
		for _, subj := range []string{"prov.applied.ace.claude-code", "prov.changed.ace.claude-code"} {
			if err := ace.nc.Publish(subj, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			m, err := events.NextMsg(3 * time.Second)
			if err != nil || m.Subject != subj {
				t.Errorf("publishing %s: the lab got %v, %v", subj, m, err)
			}
		}
		ace.clean(t)
	})

	t.Run("a large watch does not stall (flow control)", func(t *testing.T) {
		lab := connect(t, b.s, "lab")
		kv := lab.kv(t, ctx, assignmentsBucket)
		const n = 2000
		filler := strings.Repeat("x", 4096)
		for i := range n {
			if _, err := kv.PutString(ctx, fmt.Sprintf("bulk%04d.filler", i), filler); err != nil {
				t.Fatal(err)
			}
		}
		ace := connect(t, b.s, "provisioner-ace")
		keys := watchSnapshot(t, ace.kv(t, ctx, assignmentsBucket), ">")
		if want := n + len(b.mesh.Assignments); len(keys) != want {
			t.Errorf("watching the whole assignments bucket gave %d keys, want %d", len(keys), want)
		}
		ace.clean(t)
	})

	t.Run("its tool runner asks it", func(t *testing.T) {
		tr := connect(t, b.s, "toolrunner-ace")
		m, err := tr.nc.Request("prov.ask.ace", []byte(`{"module":"claude-code","kind":"config","key":"model"}`), 3*time.Second)
		if err != nil {
			t.Fatalf("toolrunner-ace asking prov.ask.ace: %v", err)
		}
		if string(m.Data) != `{"value":"claude-sonnet"}` {
			t.Errorf("prov.ask.ace answered %s", m.Data)
		}
		tr.clean(t)
	})

	// SPEC §5.4 r2: the tool runner hears prov.changed.<node>.<module> to
	// know when to ask again.
	t.Run("its tool runner hears what changed there", func(t *testing.T) {
		tr := connect(t, b.s, "toolrunner-ace")
		sub, err := tr.nc.SubscribeSync("prov.changed.ace.>")
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		ace := connect(t, b.s, "provisioner-ace")
		if err := ace.nc.Publish("prov.changed.ace.claude-code", []byte(`{"kind":"config"}`)); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(3 * time.Second)
		if err != nil {
			t.Fatalf("toolrunner-ace heard nothing on prov.changed.ace.>: %v", err)
		}
		if m.Subject != "prov.changed.ace.claude-code" || string(m.Data) != `{"kind":"config"}` {
			t.Errorf("heard %s %s", m.Subject, m.Data)
		}
		tr.clean(t)
		ace.clean(t)
	})
}

// TestProviderRights: with the rights of nodes/spec, a provider (gitea)
// reads every node's needs (SPEC §2.3 r2: to see what its consumers wait
// for), writes its own bindings, and writes no need (TestClientRefusals).
func TestProviderRights(t *testing.T) { forEachBus(t, testProviderRights) }

func testProviderRights(t *testing.T, mode string) {
	b := loadBus(t, mode)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gitea := connect(t, b.s, "gitea")
	kv := gitea.kv(t, ctx, needsBucket)
	if keys := watchSnapshot(t, kv, ">"); !slices.Equal(keys, []string{"g14.claude-code.config.model"}) {
		t.Errorf("gitea watching every need gave %q", keys)
	}
	if e, err := kv.Get(ctx, "g14.claude-code.config.model"); err != nil || string(e.Value()) != `{"state":"met"}` {
		t.Errorf("gitea getting g14's need: %v", err)
	}
	put(t, ctx, gitea, giteaBound, "ace.claude-code.gitea-read", `{"state":"bound","values":{"url":"u"}}`)
	// Its own bucket: every key read, deleted, purged, old markers dropped.
	bound := gitea.kv(t, ctx, giteaBound)
	if keys := watchSnapshot(t, bound, ">"); len(keys) != len(b.mesh.Bound[giteaBound]) {
		t.Errorf("gitea watching its bucket gave %q", keys)
	}
	if err := bound.Delete(ctx, "g14.claude-code.gitea-read"); err != nil {
		t.Errorf("gitea deleting a binding: %v", err)
	}
	if err := bound.Purge(ctx, "g14.claude-code.forge-account"); err != nil {
		t.Errorf("gitea purging a binding: %v", err)
	}
	if err := bound.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)); err != nil {
		t.Errorf("gitea purging its old markers: %v", err)
	}
	gitea.clean(t)
}
