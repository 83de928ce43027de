package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The bus going away and coming back changes nothing a client wrote: a
// report that did not change is not put again (SPEC §5.3: no event that
// says nothing), nor a need still waiting, whose entry's time is when it
// began to wait (the server's sweep judges "stood asked" by it, §6.2).
func TestAReconnectPutsNoUnchangedReportOrNeedAgain(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}},
		map[string]string{"conf": "host=${config:host}\n"})
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "mail", "waiting")
	m.settle()
	report, need := m.revision(spec.AppliedBucket, "ace.web"), m.revision(spec.NeedsBucket, "ace.mail.config.host")
	waiting := m.revision(spec.AppliedBucket, "ace.mail")

	from := m.fills.count()
	m.busDown()
	time.Sleep(1100 * time.Millisecond) // a new second for "at"
	m.busUp()
	bustest.Eventually(t, 15*time.Second, func() error { // the reconnect's refill
		if m.fillsPerPath(from)["/etc/web/a.conf"] == 0 {
			return fmt.Errorf("web not filled again since the bus came back")
		}
		return nil
	})
	m.settle()
	if got := m.revision(spec.AppliedBucket, "ace.web"); got != report {
		r, _ := m.report("ace", "web")
		t.Errorf("web's report was put again (revision %d, then %d): %v", report, got, r)
	}
	if got := m.revision(spec.AppliedBucket, "ace.mail"); got != waiting {
		t.Errorf("mail's waiting report was put again (revision %d, then %d)", waiting, got)
	}
	if got := m.revision(spec.NeedsBucket, "ace.mail.config.host"); got != need {
		t.Errorf("mail's waiting need was put again (revision %d, then %d)", need, got)
	}

	// What did change while the bus was away is still written.
	m.put(spec.ConfigBucket, "ace.mail.host", "smtp.mesh.internal")
	m.waitFile("/etc/mail.conf", "host=smtp.mesh.internal\n")
	m.waitState("ace", "mail", "applied")
}
