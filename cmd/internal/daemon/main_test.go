package daemon

import (
	"os"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill/filltest"
)

// TestMain removes the benchmarks' fill directories once every benchmark
// has run, not as each ends (see filltest.Dir); BENCH_KEEP=1 keeps them,
// for benchmark runs back to back.
func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("BENCH_KEEP") == "" {
		filltest.RemoveAll()
	}
	os.Exit(code)
}
