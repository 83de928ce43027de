package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The reconnect's refill sends every file (SPEC §4.3), so a file changed
// on disk is put back. With mesh-fill down at that moment the refill
// fails; once mesh-fill is back its retry is still the whole refill. It
// used to be the files whose value moved since the last fill answered
// (none): nothing was sent, the module stayed failed "not answering" and
// the changed file stayed so until the refill tick (a minute; an hour
// here).
func TestAReconnectRefillThatFailedIsRetriedWholeOnceMeshFillIsBack(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	m.client("ace", f.socket)
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	m.settle()

	if err := os.WriteFile(filepath.Join(m.root, "/etc/web/a.conf"), []byte("tampered\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	f.stop()
	m.busDown()
	m.busUp()
	m.waitState("ace", "web", "failed")
	f.start()
	m.waitFileFor("/etc/web/a.conf", "model = opus\nport = 8080\n", 5*time.Second)
	m.waitState("ace", "web", "applied")
}
