package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Any client may create a push consumer on a stream it reads, and
// nats-server does not check a consumer's deliver subject against its
// creator's rights: another node's client (its own needs keys are its to
// write) can have JetStream deliver a value it wrote, {"secret": "<any
// vault name>"}, on mesh-vault.secret-changed, to every client of the
// mesh, again and again. Such a delivery keeps the stream's subject (and
// a $JS.ACK reply): it is no event of the vault's, and is ignored with a
// warning; the vault's own events are taken as before.
func TestASecretChangedDeliveredByAnotherClientsConsumerIsIgnored(t *testing.T) {
	r := newSpoofRig(t)
	nc, js, log, seen := r.nc, r.js, r.log, r.seen
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := bustest.Bucket(t, js, spec.NeedsBucket)
	if _, err := kv.Put(ctx, "g14.x.config.y", []byte(`{"secret":"own/web/api-key"}`)); err != nil {
		t.Fatal(err)
	}
	stream, filter := "KV_"+spec.NeedsBucket, "$KV."+spec.NeedsBucket+".g14.x.config.y"
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{
		"name": "spoof", "deliver_subject": spec.VaultChangedSubject, "filter_subject": filter,
		"ack_policy": "none", "deliver_policy": "all"}})
	if r, err := nc.Request("$JS.API.CONSUMER.CREATE."+stream+".spoof."+filter, body, 10*time.Second); err != nil || strings.Contains(string(r.Data), `"error"`) {
		t.Fatalf("creating the consumer: %v %s", err, r.Data)
	}
	select {
	case <-seen: // delivered to this connection: the watch's copy may come a moment later
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer delivered nothing within 30s")
	}
	// The server may queue the watch's copy after the tap's, and after the
	// vault's event published now: wait for the watch to say it first
	// (a race seen once in make test).
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(log.String(), "ignored") {
			return fmt.Errorf("no warning says the delivery was ignored:\n%s", log)
		}
		return nil
	})
	r.vaultsEventComesFirst("delivered by another client's consumer")
}

// A stream's republish (a stream's manager may set one) sends what is
// written to it on any subject, the subject itself kept: it carries the
// Nats-Stream header, and is no event of the vault's either.
func TestASecretChangedRepublishedByAStreamIsIgnored(t *testing.T) {
	r := newSpoofRig(t)
	js, seen := r.js, r.seen
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "GITEA", Subjects: []string{"gitea.evil"},
		RePublish: &jetstream.RePublish{Source: "gitea.evil", Destination: spec.VaultChangedSubject}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "gitea.evil", []byte(`{"secret":"own/web/api-key"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream republished nothing within 30s")
	}
	r.vaultsEventComesFirst("republished by a stream")
}

// spoofRig is a connection watching secret-changed (WatchChanged, its
// names on names, its log in log) and a raw tap on the subject (seen).
type spoofRig struct {
	t     *testing.T
	nc    *nats.Conn
	js    jetstream.JetStream
	log   *bustest.Buffer
	names chan string
	seen  chan *nats.Msg
}

func newSpoofRig(t *testing.T) *spoofRig {
	t.Helper()
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	r := &spoofRig{t: t, nc: nc, js: js, log: &bustest.Buffer{}, names: make(chan string, 16), seen: make(chan *nats.Msg, 16)}
	if _, err := WatchChanged(nc, zerolog.New(r.log), func(name string) { r.names <- name }); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.ChanSubscribe(spec.VaultChangedSubject, r.seen); err != nil {
		t.Fatal(err)
	}
	return r
}

// vaultsEventComesFirst publishes the vault's own event and checks it is
// the first name the watch hands on: the spoofed delivery (how, for the
// failure) was not.
func (r *spoofRig) vaultsEventComesFirst(how string) {
	r.t.Helper()
	if err := r.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"own/app/api-key"}`)); err != nil {
		r.t.Fatal(err)
	}
	select {
	case got := <-r.names:
		if got != "own/app/api-key" {
			r.t.Fatalf("fn got %q, %s, before the vault's own event", got, how)
		}
	case <-time.After(30 * time.Second):
		r.t.Fatal("fn not called for the vault's event within 30s")
	}
}
