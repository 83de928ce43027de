package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// streams lists every JetStream stream of the bus (KV buckets and object
// stores are streams: KV_<bucket>, OBJ_<bucket>), sorted.
func (m *mesh) streams() []string {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	names := m.js.StreamNames(ctx)
	var out []string
	for n := range names.Name() {
		out = append(out, n)
	}
	if err := names.Err(); err != nil {
		m.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// SPEC §2.2: a bucket that does not exist yet is waited for, looked for
// again, and never created by the client. A client started on a bus
// holding nothing makes no stream; once the server's and the operator's
// buckets are there it takes its plans, and the bucket a provider's
// bindings live in and the object store its templates live in, made
// later, are found without a restart; at no point has the client made a
// bucket of its own.
func TestAClientOnABareBusCreatesNoBucketAndFillsOnceTheyAreMade(t *testing.T) {
	m := newBareMesh(t)
	m.client("ace")
	time.Sleep(time.Second) // ten Rechecks of the test client
	if got := m.streams(); len(got) != 0 {
		t.Fatalf("on a bare bus, streams %q were made", got)
	}

	// The server's buckets and registry, the operator's assignments and
	// config; web's templates in an object store not made yet, cc's
	// binding in a gitea_bound not made yet.
	provisionBus(t, m.js, 1)
	made := m.streams()
	m.webModule()
	p := webPlan()
	// One more member than web's first archive: the same three alone are
	// the same digest, which the client, holding that archive, takes
	// without a fetch (under load it fetched the first before this plan
	// came, and web never waited for mesh-artifacts).
	archive, digest, err := scale.TarGz(map[string][]byte{
		"a": []byte(webTemplates["a"]), "b": []byte(webTemplates["b"]), "c": []byte(webTemplates["c"]),
		"README": []byte("web's templates, from the object store\n")})
	if err != nil {
		t.Fatal(err)
	}
	p.Templates.Ref, p.Templates.Digest = "obj://mesh-artifacts/web.tar.gz", digest
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: p})
	m.put(spec.AssignmentsBucket, "ace.web", string(b))
	m.boundConsumer()

	m.waitWaiting("ace", "web", "mesh-artifacts")
	m.waitWaiting("ace", "cc", "bucket gitea_bound does not exist yet")
	time.Sleep(500 * time.Millisecond)
	if got := m.streams(); !slices.Equal(got, made) {
		t.Fatalf("streams %q, want only those made for the test %q", got, made)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs, err := m.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh-artifacts"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "web.tar.gz", archive); err != nil {
		t.Fatal(err)
	}
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"https://forge"}}`)
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitFile("/etc/cc/forge.toml", "user = cc-ace\nurl = https://forge\n")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "cc", "applied")
}
