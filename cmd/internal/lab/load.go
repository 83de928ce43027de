package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Artifacts is the JetStream object store holding the templates archives.
const Artifacts = spec.ArtifactsStore

// boundBuckets lists the <provider>_bound buckets the example mesh names.
func boundBuckets(m *examples.Mesh) []string {
	return slices.Sorted(maps.Keys(m.Bound))
}

// providersOf lists the providers whose bindings the example mesh holds:
// each gets a user of its own, and each client may read their buckets.
func providersOf(m *examples.Mesh) []string {
	var out []string
	for _, b := range boundBuckets(m) {
		if p, ok := spec.BoundProvider(b); ok {
			out = append(out, p)
		}
	}
	return out
}

// makeBuckets creates, as user lab, the buckets of the other domains
// (SPEC §2.2: "the lab creates the rest"): assignments, config, every
// <provider>_bound, and the mesh-artifacts object store. The server makes
// its own four.
func makeBuckets(ctx context.Context, lab *conn, m *examples.Mesh) error {
	for _, b := range append([]string{spec.AssignmentsBucket, spec.ConfigBucket}, boundBuckets(m)...) {
		if _, err := lab.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b}); err != nil {
			return fmt.Errorf("creating bucket %s: %w", b, err)
		}
	}
	if _, err := lab.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: Artifacts}); err != nil {
		return fmt.Errorf("creating object store %s: %w", Artifacts, err)
	}
	return nil
}

// load puts the example mesh on the bus, each part as the user owning it in
// a real mesh: mesh-controller the templates archives and assignments,
// mesh-config the config values, each provider its bound entries. left is
// told each owner or group left out of a plan (see localOwners).
func load(ctx context.Context, s *natsBus, m *examples.Mesh, left func(name string)) error {
	ctl, err := connect(s, "mesh-controller")
	if err != nil {
		return err
	}
	defer ctl.close()
	obs, err := ctl.js.ObjectStore(ctx, Artifacts)
	if err != nil {
		return fmt.Errorf("mesh-controller: opening object store %s: %w", Artifacts, err)
	}
	assignments, err := ctl.js.KeyValue(ctx, spec.AssignmentsBucket)
	if err != nil {
		return fmt.Errorf("mesh-controller: opening bucket %s: %w", spec.AssignmentsBucket, err)
	}
	digests := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(m.Assignments)) {
		toks, err := spec.DecodeKey(key, 2)
		if err != nil {
			return fmt.Errorf("example assignment %s: %w", key, err)
		}
		module := toks[1]
		name := module + ".tar.gz"
		if _, ok := digests[module]; !ok {
			data, digest, err := m.Archive(module)
			if err != nil {
				return err
			}
			if _, err := obs.PutBytes(ctx, name, data); err != nil {
				return fmt.Errorf("mesh-controller: putting %s in %s: %w", name, Artifacts, err)
			}
			digests[module] = digest
		}
		a, err := m.WithTemplates(key, "obj://"+Artifacts+"/"+name, digests[module])
		if err != nil {
			return err
		}
		if a, err = localOwners(key, a, left); err != nil {
			return err
		}
		if _, err := assignments.Put(ctx, key, a); err != nil {
			return fmt.Errorf("mesh-controller: putting assignment %s: %w", key, err)
		}
	}

	cfg, err := connect(s, "mesh-config")
	if err != nil {
		return err
	}
	defer cfg.close()
	resolved, err := cfg.js.KeyValue(ctx, spec.ConfigBucket)
	if err != nil {
		return fmt.Errorf("mesh-config: opening bucket %s: %w", spec.ConfigBucket, err)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Config)) {
		if _, err := resolved.PutString(ctx, k, m.Config[k]); err != nil {
			return fmt.Errorf("mesh-config: putting %s of %s: %w", k, spec.ConfigBucket, err)
		}
	}

	for _, bucket := range boundBuckets(m) {
		if err := loadBound(ctx, s, bucket, m.Bound[bucket]); err != nil {
			return err
		}
	}
	return nil
}

// loadBound writes a <provider>_bound bucket as the provider's user.
func loadBound(ctx context.Context, s *natsBus, bucket string, entries map[string]json.RawMessage) error {
	provider, _ := spec.BoundProvider(bucket)
	c, err := connect(s, provider)
	if err != nil {
		return fmt.Errorf("%w (the lab makes a user per provider of the example mesh)", err)
	}
	defer c.close()
	kv, err := c.js.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("%s: opening bucket %s: %w", provider, bucket, err)
	}
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		if _, err := kv.Put(ctx, k, entries[k]); err != nil {
			return fmt.Errorf("%s: putting %s of %s: %w", provider, k, bucket, err)
		}
	}
	return nil
}

// localOwners is the assignment with every file's and secret's owner and
// group that is not a user or group of this machine taken out — only when
// the lab runs as root: mesh-fill then really chowns, and refuses a name it
// cannot resolve (claude, git, grafana are users of the real nodes, not of
// this one). Not root, mesh-fill leaves owners as they are and the plan is
// kept whole. left is told each name left out.
func localOwners(key string, data []byte, left func(name string)) ([]byte, error) {
	if os.Geteuid() != 0 {
		return data, nil
	}
	var a map[string]any
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("example assignment %s: %w", key, err)
	}
	p, _ := a["provisioning"].(map[string]any)
	changed := false
	for _, list := range []string{"files", "secrets", "provisions"} {
		entries, _ := p[list].([]any)
		for _, e := range entries {
			f, _ := e.(map[string]any)
			for _, field := range []string{"owner", "group"} {
				name, _ := f[field].(string)
				if name == "" || known(field, name) {
					continue
				}
				delete(f, field)
				changed = true
				left(name)
			}
		}
	}
	if !changed {
		return data, nil
	}
	return json.Marshal(a)
}

// known says whether name is a user (field owner) or group here.
func known(field, name string) bool {
	var err error
	if field == "owner" {
		_, err = user.Lookup(name)
	} else {
		_, err = user.LookupGroup(name)
	}
	return err == nil
}
