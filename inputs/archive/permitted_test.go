package archive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAnObjectStoreTheBusRefusesIsSaid: a client's rights name one object
// store (spec.ArtifactsStore); a plan whose templates live in another is
// refused by the bus, and the fetch says so ("not permitted to read object
// store …", as SPEC §4.6 says of a bucket), not a bare timeout.
func TestAnObjectStoreTheBusRefusesIsSaid(t *testing.T) {
	js, data := refusedStore(t)
	st := &Store{Dir: t.TempDir(), JS: js}
	fctx, fcancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer fcancel()
	_, err := st.Get(fctx, "obj://elsewhere/t.tar.gz", digestOf(data))
	if err == nil || !strings.Contains(err.Error(), "not permitted to read object store elsewhere") {
		t.Errorf("fetching from an object store the bus refuses: %v, want not permitted to read object store elsewhere", err)
	}
}

// The fetch says the refusal as soon as the bus does, not at the
// end of its try: with the client's --fetch-timeout (30 s) the module
// waited half a minute before its why said the bus refused its templates,
// and again at every try after. The first outcome of a Fetcher at the
// default Timeout says it (and is worth waiting on: rights may be
// granted).
func TestAnObjectStoreTheBusRefusesIsSaidWithinALookupsBound(t *testing.T) {
	js, data := refusedStore(t)
	f := NewFetcher(t.Context(), &Store{Dir: t.TempDir(), JS: js}, backoff.Doubling{Min: time.Hour, Max: time.Hour})
	f.Fetch(nodes.ArchiveWant{Module: "web", Ref: "obj://elsewhere/t.tar.gz", Digest: digestOf(data)})
	// The refusal is heard on the connection (bus.LookupObjectStore): the
	// outcome comes at once, well inside one lookup's 5 s bound.
	r, ok := nextFetched(t, f, 3*time.Second)
	if !ok {
		t.Fatal("no outcome within 3 s of a fetch the bus refuses (the bus says the refusal at once)")
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "not permitted to read object store elsewhere") || Broken(r.Err) {
		t.Errorf("first outcome: %v, want not permitted to read object store elsewhere (worth waiting on)", r.Err)
	}
}

// refusedStore runs a bus with a client of node ace and the lab, makes
// the object store "elsewhere" (no client's to read) holding t.tar.gz, and
// returns the client's JetStream and the archive.
func refusedStore(t *testing.T) (jetstream.JetStream, []byte) {
	t.Helper()
	client, err := spec.RightsOf(spec.RoleClient, "ace", nil)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := spec.RightsOf(spec.RoleLab, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, creds := authtest.Bus(t, []spec.Rights{client, lab})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := nats.Connect(s.ClientURL(), nats.UserCredentials(creds["lab"]))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ljs, _ := jetstream.New(ln)
	data := makeTar(t, true, sampleMembers()...)
	obs, err := ljs.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, "t.tar.gz", data); err != nil {
		t.Fatal(err)
	}

	nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(creds[client.User]), nats.CustomInboxPrefix(client.Inbox),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	return js, data
}
