package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client restarted on its state dir, nothing having moved, says nothing
// new: every module's first report after the start is the state it had
// (never "waiting" for a templates archive its cache holds), and a need
// or report that did not change is not put again, so a need's entry time
// stays when it began to wait, which the server's sweep reads for "stood
// asked" (SPEC §5.2, §5.3, §6.2 r2).
func TestARestartSaysNothingNewOfModulesThatDidNotMove(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}},
		map[string]string{"conf": "host=${config:host}\nport=${port:smtp}\n"})
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "mail", "waiting")
	m.settle()
	need, port := m.revision(spec.NeedsBucket, "ace.mail.config.host"), m.revision(spec.NeedsBucket, "ace.mail.port.smtp")
	waiting := m.revision(spec.AppliedBucket, "ace.mail")
	stop()

	time.Sleep(1100 * time.Millisecond) // a new second for "at"
	events, _ := m.nc.SubscribeSync("prov.applied.ace.>")
	m.nc.Flush()
	m.client("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.settle()
	for {
		msg, err := events.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		var r struct{ Module, State string }
		json.Unmarshal(msg.Data, &r)
		if r.Module != "web" || r.State != "applied" {
			t.Errorf("after the restart: %s", msg.Data)
		}
	}
	for _, c := range []struct {
		bucket, key string
		rev         uint64
	}{{spec.NeedsBucket, "ace.mail.config.host", need}, {spec.NeedsBucket, "ace.mail.port.smtp", port},
		{spec.AppliedBucket, "ace.mail", waiting}} {
		if got := m.revision(c.bucket, c.key); got != c.rev {
			v, _ := m.get(c.bucket, c.key)
			t.Errorf("%s %s put again at restart (revision %d, then %d): %s", c.bucket, c.key, c.rev, got, v)
		}
	}
}
