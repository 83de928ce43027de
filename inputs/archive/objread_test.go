package archive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestAnObjectTheBusRefusesToReadIsSaidAtOnce: the bus lets the client
// look the object store up but not read its objects (a direct get of the
// object's description refused, rights written by hand). The fetch says
// "not permitted to read object store …" naming the refused request as
// soon as the bus refuses it; before, the read waited out the whole try
// (its context) for a reply the bus never sends, and said a timeout.
func TestAnObjectTheBusRefusesToReadIsSaidAtOnce(t *testing.T) {
	s := bustest.Start(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "ace", Password: "ace", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"},
					Deny: []string{"$JS.API.DIRECT.GET.OBJ_elsewhere.>", "$JS.API.STREAM.MSG.GET.OBJ_elsewhere"}},
			}},
			{Username: "admin", Password: "admin"},
		}
	})
	_, ajs := bustest.JetStream(t, s, nats.UserInfo("admin", "admin"))
	data := makeTar(t, true, sampleMembers()...)
	obs, err := ajs.CreateObjectStore(t.Context(), jetstream.ObjectStoreConfig{Bucket: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(t.Context(), "t.tar.gz", data); err != nil {
		t.Fatal(err)
	}
	_, js := bustest.JetStream(t, s, nats.UserInfo("ace", "ace"))
	st := &Store{Dir: t.TempDir(), JS: js}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = st.Get(ctx, "obj://elsewhere/t.tar.gz", digestOf(data))
	for _, want := range []string{"not permitted to read object store elsewhere", `"$JS.API.DIRECT.GET.OBJ_elsewhere.`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fetching an object the bus refuses to read: %v\nwant it to say %s", err, want)
		}
	}
}
