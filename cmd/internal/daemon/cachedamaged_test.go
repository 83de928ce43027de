package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A templates archive whose cache file in the state dir was damaged while
// the client was down (truncated here) is warned of at the next start,
// naming the file, and fetched again: the module is applied from its ref.
func TestADamagedCacheFileIsWarnedOfNamingIt(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	onState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", onState)
	m.waitState("ace", "web", "applied")
	stop()
	cached, err := filepath.Glob(filepath.Join(state, "templates", "*.tar"))
	if err != nil || len(cached) != 1 {
		t.Fatalf("cache files %v (%v), want one", cached, err)
	}
	st, err := os.Stat(cached[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cached[0], st.Size()/2); err != nil {
		t.Fatal(err)
	}

	m.client("ace", onState)
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, l := range strings.Split(m.logs.String(), "\n") {
			if strings.Contains(l, "templates archive's cache file in the state dir is damaged") && strings.Contains(l, cached[0]) {
				return nil
			}
		}
		return errors.New("no warning of the damaged cache file naming it")
	})
	m.waitState("ace", "web", "applied")
	// The applied key may still be the first run's: the archive fetched
	// again is written to the cache once it is in, waited for.
	bustest.Eventually(t, 10*time.Second, func() error {
		if b, err := os.ReadFile(cached[0]); err != nil || int64(len(b)) != st.Size() {
			return fmt.Errorf("the cache file after the start: %d bytes (%v), want the %d fetched again", len(b), err, st.Size())
		}
		return nil
	})
}
