package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// specExamples are SPEC §6.1's examples, as written there.
var specExamples = map[string]string{
	"config":    `{"kind": "config", "owner": "mesh-config", "bucket": "mesh-config_resolved", "key": "<node>.<module>.<key>"}`,
	"secret":    `{"kind": "secret", "owner": "mesh-vault", "verb": "mesh-vault.get"}`,
	"consumers": `{"kind": "consumers", "owner": "mesh-vault", "verb": "mesh-vault.get", "bucket": "mesh-controller_assignments", "key": "<node>.<module>"}`,
	"bound":     `{"kind": "bound", "owner": "<provider>", "bucket": "<provider>_bound", "key": "<node>.<module>.<provision>[.<local>]"}`,
	"collected": `{"kind": "collected", "owner": "mesh-provisioner", "bucket": "mesh-provisioner_collect", "key": "<node>.<collection>.<contributor>"}`,
	"dir":       `{"kind": "dir", "owner": "mesh-controller", "bucket": "mesh-controller_assignments", "key": "<node>.<module>", "field": "provisioning.placement.dir"}`,
}

func compact(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// specJSON is what the registry must hold for kind, from the SPEC: the
// examples, and the kinds said to be "like" one of them.
func specJSON(t *testing.T, kind string) []byte {
	t.Helper()
	if ex, ok := specExamples[kind]; ok {
		return compact(t, ex)
	}
	like := map[string]string{"shell": "collected", "environment": "collected", "contribution": "collected",
		"port": "dir", "access": "dir", "seat": "dir", "machine": "dir"}[kind]
	if like == "" {
		t.Fatalf("kind %s is not in the SPEC", kind)
	}
	b := bytes.Replace(compact(t, specExamples[like]), []byte(`"kind":"`+like+`"`), []byte(`"kind":"`+kind+`"`), 1)
	return bytes.Replace(b, []byte("placement."+like), []byte("placement."+kind), 1)
}

func TestRegistryIsTheSpecTable(t *testing.T) {
	reg := Registry()
	var kinds []string
	for _, e := range reg {
		kinds = append(kinds, e.Kind)
		if got, want := EntryJSON(e), specJSON(t, e.Kind); !bytes.Equal(got, want) {
			t.Errorf("kind %s:\n got %s\nwant %s", e.Kind, got, want)
		}
	}
	want := []string{"access", "bound", "collected", "config", "consumers", "contribution", "dir",
		"environment", "machine", "port", "seat", "secret", "shell"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds %v, want %v (sorted)", kinds, want)
	}
	if !sort.StringsAreSorted(kinds) {
		t.Errorf("Registry() not sorted by kind: %v", kinds)
	}
}

func TestPublishRegistryWritesOnlyWhatDiffers(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	kv := bucket(t, js, spec.RegistryBucket)
	ctx := testCtx(t)
	put(t, kv, "retired-kind", `{"kind":"retired-kind"}`)

	w, d, err := PublishRegistry(ctx, kv, Registry())
	if err != nil || w != len(Registry()) || d != 1 {
		t.Fatalf("first publish: written %d deleted %d err %v; want %d, 1, nil", w, d, err, len(Registry()))
	}
	revs := map[string]uint64{}
	for _, e := range Registry() {
		got, err := kv.Get(ctx, e.Kind)
		if err != nil {
			t.Fatalf("kind %s: %v", e.Kind, err)
		}
		if want := specJSON(t, e.Kind); !bytes.Equal(got.Value(), want) {
			t.Errorf("kind %s holds %s, want %s", e.Kind, got.Value(), want)
		}
		revs[e.Kind] = got.Revision()
	}
	if _, err := kv.Get(ctx, "retired-kind"); err == nil {
		t.Errorf("a kind no domain answers was not deleted")
	}

	w, d, err = PublishRegistry(ctx, kv, Registry())
	if err != nil || w != 0 || d != 0 {
		t.Fatalf("second publish: written %d deleted %d err %v; want 0, 0, nil", w, d, err)
	}
	for kind, rev := range revs {
		got, _ := kv.Get(ctx, kind)
		if got.Revision() != rev {
			t.Errorf("kind %s: revision moved %d → %d on an unchanged publish", kind, rev, got.Revision())
		}
	}
}

func TestRunRegistryPutsBackAndDeletesEachInterval(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	kv := bucket(t, js, spec.RegistryBucket)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { RunRegistry(ctx, kv, 200*time.Millisecond, quietLog()); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	hasSpec := func(kind string) error {
		got, err := kv.Get(ctx, kind)
		if err != nil {
			return fmt.Errorf("kind %s: %w", kind, err)
		}
		if want := specJSON(t, kind); !bytes.Equal(got.Value(), want) {
			return fmt.Errorf("kind %s holds %s", kind, got.Value())
		}
		return nil
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		for _, k := range []string{"config", "secret", "bound", "dir"} {
			if err := hasSpec(k); err != nil {
				return err
			}
		}
		return nil
	})
	secret, _ := kv.Get(ctx, "secret")

	put(t, kv, "config", `{"kind":"config","owner":"someone-else"}`)
	put(t, kv, "extra", `{"kind":"extra"}`)
	bustest.Eventually(t, 5*time.Second, func() error {
		if _, err := kv.Get(ctx, "extra"); err == nil {
			return fmt.Errorf("kind extra still there")
		}
		return hasSpec("config")
	})
	again, _ := kv.Get(ctx, "secret")
	if again.Revision() != secret.Revision() {
		t.Errorf("unchanged kind secret rewritten: revision %d → %d", secret.Revision(), again.Revision())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunRegistry did not return after its context ended")
	}
}
