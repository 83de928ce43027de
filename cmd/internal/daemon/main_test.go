package daemon

import (
	"os"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill/filltest"
)

// TestMain removes the benchmarks' fill directories once every benchmark
// has run, not as each ends (see filltest.Dir; BENCH_KEEP=1 keeps them).
func TestMain(m *testing.M) {
	code := m.Run()
	filltest.RemoveAll()
	os.Exit(code)
}
