package daemon

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// OnSettled is how the client's main learns its cold start is over (it
// collects once and keeps one P from then on): it comes once, when the
// cold start's files are on disk and its needs on the bus, and not again
// for the changes after it.
func TestOnSettledComesOnceTheColdStartsFilesAreFilled(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	var calls atomic.Int32
	filledThen := make(chan bool, 4)
	needsThen := make(chan int, 4)
	m.client("ace", func(c *Config) {
		c.OnSettled = func() {
			calls.Add(1)
			_, err := os.Stat(filepath.Join(m.root, "/etc/web/c.conf"))
			filledThen <- err == nil
			needsThen <- len(m.needKeys("ace.web."))
		}
	})
	select {
	case filled := <-filledThen:
		if !filled {
			t.Fatal("OnSettled came before the cold start's files were filled")
		}
		if n := <-needsThen; n == 0 {
			t.Fatal("OnSettled came before the cold start's needs were written")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnSettled never came")
	}
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitState("ace", "web", "applied")
	time.Sleep(300 * time.Millisecond) // a few retry ticks (Recheck 100 ms)
	if n := calls.Load(); n != 1 {
		t.Fatalf("OnSettled called %d times, want once", n)
	}
}
