package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Issue 19.8: module a's templates ref is a FIFO nobody writes to; module b
// has the same digest and a good ref. The FIFO used to hold up a and b for
// ever. Now b is filled at once, and a is never stuck: its ref is refused
// by name (not a regular file), or it is filled from the archive b got.
func TestATemplatesRefThatIsAFIFOHoldsUpNoModuleOfTheSameDigest(t *testing.T) {
	m := newMesh(t)
	fifo := filepath.Join(m.tmpl, "a.tar.gz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // unblocks a reader stuck opening it
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	p := plan1("/etc/a/f")
	p.Templates.Ref, p.Templates.Digest = m.archive("b", map[string]string{"t": "port ${port:http}\n"})
	pb := plan1("/etc/b/f")
	pb.Templates = p.Templates
	p.Templates.Ref = "file://" + fifo
	m.assign("ace", "a", p, nil)
	m.client("ace")
	time.Sleep(100 * time.Millisecond) // a's fetch is under way first
	m.assign("ace", "b", pb, nil)

	bustest.Eventually(m.t, 10*time.Second, func() error {
		_, _, err := m.file("/etc/b/f")
		return err
	})
	m.waitFile("/etc/b/f", "port 8080\n")
	m.waitState("ace", "b", "applied")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "a")
		b, _ := json.Marshal(r)
		if r["state"] != "applied" && !contains(string(b), "file://"+fifo) {
			return fmt.Errorf("a: report %s: neither applied nor naming its ref", b)
		}
		return nil
	})
}
