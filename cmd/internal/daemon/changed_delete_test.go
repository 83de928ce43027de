package daemon

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A config value deleted moved too (SPEC §5.4): prov.changed names its key,
// and an ask for it is answered with an error after it.
func TestAConfigDeletePublishesChangedNamingTheKey(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.web.extra", "x")
	m.client("ace")
	m.waitState("ace", "web", "applied")
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	m.nc.Flush()
	m.del(spec.ConfigBucket, "ace.web.extra")
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.web" || string(msg.Data) != `{"key":"extra","kind":"config"}` {
		t.Fatalf("delete event %v %v", msg, err)
	}
	if r := askFor(t, m, "ace", `{"module":"web","kind":"config","key":"extra"}`); r["error"] == "" {
		t.Fatalf("a deleted key answered %v", r)
	}
}

// A delete of a config key that holds no value (deleted already, or
// never written) and a purge after a delete move no value: no
// prov.changed (SPEC §5.4: "when a value moved"). Before, each published
// {"key":"extra","kind":"config"} again, sending every tool runner of the
// node to ask again for a value that had not moved.
func TestAConfigDeleteOfNoValuePublishesNoChanged(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.web.extra", "x")
	m.client("ace")
	m.waitState("ace", "web", "applied")
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	m.nc.Flush()
	m.del(spec.ConfigBucket, "ace.web.extra")
	if msg, err := sub.NextMsg(10 * time.Second); err != nil || string(msg.Data) != `{"key":"extra","kind":"config"}` {
		t.Fatalf("delete event %v %v", msg, err)
	}
	m.del(spec.ConfigBucket, "ace.web.extra")
	if err := m.kv(spec.ConfigBucket).Purge(t.Context(), "ace.web.extra"); err != nil {
		t.Fatal(err)
	}
	m.del(spec.ConfigBucket, "ace.web.never")
	// Read in order behind them by the same watch: the next event is this one's.
	m.put(spec.ConfigBucket, "ace.web.after", "y")
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil || string(msg.Data) != `{"key":"after","kind":"config"}` {
		t.Fatalf("after deletes of no value, the next event is %s (%v); want after's", msgData(msg), err)
	}
}

func msgData(msg *nats.Msg) string {
	if msg == nil {
		return "none"
	}
	return msg.Subject + " " + string(msg.Data)
}
