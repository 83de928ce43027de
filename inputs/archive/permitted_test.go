package archive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAnObjectStoreTheBusRefusesIsSaid: a client's rights name one object
// store (spec.ArtifactsStore); a plan whose templates live in another is
// refused by the bus, and the fetch says so ("not permitted to read object
// store …", as SPEC §4.6 says of a bucket), not a bare timeout.
func TestAnObjectStoreTheBusRefusesIsSaid(t *testing.T) {
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
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st := &Store{Dir: t.TempDir(), JS: js}
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
	defer fcancel()
	_, err = st.Get(fctx, "obj://elsewhere/t.tar.gz", digestOf(data))
	if err == nil || !strings.Contains(err.Error(), "not permitted to read object store elsewhere") {
		t.Errorf("fetching from an object store the bus refuses: %v, want not permitted to read object store elsewhere", err)
	}
}
