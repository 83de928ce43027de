package archive

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := startServer(t)
	return js
}

// startServer runs a nats-server with JetStream and connects to it; the
// connection reconnects for ever, so requests wait while the server is gone.
func startServer(t *testing.T) (*server.Server, jetstream.JetStream) {
	t.Helper()
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	return s, js
}

func TestGetObjectStore(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	data := makeTar(t, true, sampleMembers()...)
	ref := "obj://mesh-artifacts/claude-code-7f3a.tar.gz"
	s := &Store{Dir: t.TempDir(), JS: js}

	_, err := s.Get(ctx, ref, digestOf(data))
	wantErr(t, err, ErrNotThereYet, ref, `bucket "mesh-artifacts"`)

	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh-artifacts"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, ref, digestOf(data))
	wantErr(t, err, ErrNotThereYet, ref, `object "claude-code-7f3a.tar.gz"`)

	if _, err := obs.PutBytes(ctx, "claude-code-7f3a.tar.gz", data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ref, digestOf(data))
	if err != nil {
		t.Fatal(err)
	}
	if string(got["config.toml"]) != string(sampleWant["config.toml"]) || len(got) != len(sampleWant) {
		t.Fatalf("members = %q", got)
	}

	// The object's bytes are checked against the plan, not trusted.
	other := makeTar(t, true, file("other", "x"))
	if _, err := obs.PutBytes(ctx, "other.tgz", other); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "obj://mesh-artifacts/other.tgz", "sha256:"+strings.Repeat("0", 64))
	wantErr(t, err, ErrDigestMismatch, "obj://mesh-artifacts/other.tgz", "not the plan's sha256:"+strings.Repeat("0", 64))
	if strings.Contains(err.Error(), digestOf(other)) {
		t.Fatalf("the error carries the digest of what was read: %q", err)
	}
}

func TestGetObjectStoreOverLimit(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh-artifacts"})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4096)
	if _, err := obs.PutBytes(ctx, "big.tar", big); err != nil {
		t.Fatal(err)
	}
	s := &Store{Dir: t.TempDir(), JS: js, lim: limits{bytes: 1024, members: 10}}
	_, err = s.Get(ctx, "obj://mesh-artifacts/big.tar", digestOf(big))
	wantErr(t, err, ErrLimit, "obj://mesh-artifacts/big.tar", "over 1024 bytes")
}

func TestGetObjectStoreWithoutJetStream(t *testing.T) {
	_, err := (&Store{Dir: t.TempDir()}).Get(context.Background(), "obj://b/n", "sha256:"+strings.Repeat("0", 64))
	wantErr(t, err, nil, "obj://b/n", "no JetStream connection")
	if errors.Is(err, ErrNotThereYet) {
		t.Fatal("a missing JetStream connection is not something to wait for")
	}
}

// An obj:// ref whose object store bucket does not exist yet is looked for
// again at least every Recheck (SPEC §2.2: a bucket not there yet is
// looked for again at least every 5 s), however far the fetch's backoff
// has grown: the lab may make the bucket after the plan is published.
func TestAMissingObjectStoreBucketIsLookedForAgainEveryRecheck(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := NewFetcher(ctx, &Store{Dir: t.TempDir(), JS: js}, backoff.Doubling{Min: time.Hour, Max: time.Hour})
	f.Recheck = 50 * time.Millisecond
	data := makeTar(t, true, sampleMembers()...)
	w := nodes.ArchiveWant{Module: "web", Ref: "obj://mesh-artifacts/web.tar.gz", Digest: digestOf(data)}
	f.Fetch(w)
	r, ok := nextFetched(t, f, 30*time.Second)
	if !ok || !errors.Is(r.Err, ErrNotThereYet) || Broken(r.Err) {
		t.Fatalf("first try: %+v, %v", r, ok)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "mesh-artifacts"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "web.tar.gz", data); err != nil {
		t.Fatal(err)
	}
	for {
		r, ok := nextFetched(t, f, 30*time.Second)
		if !ok {
			t.Fatal("the bucket and the archive came, and no fetch within 30s got them (backoff 1h)")
		}
		switch {
		case r.Err == nil:
			if string(r.Members["config.toml"]) != string(sampleWant["config.toml"]) {
				t.Fatalf("members = %q", r.Members)
			}
			return
		case errors.Is(r.Err, jetstream.ErrObjectNotFound):
			return // a try between the bucket and its object: it found the bucket
		case !errors.Is(r.Err, jetstream.ErrBucketNotFound):
			t.Fatalf("a try failed otherwise: %v", r.Err)
		}
	}
}
