package daemon

import (
	"os"
	"strconv"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill/filltest"
)

// TestMain removes the benchmarks' fill directories once every benchmark
// has run, not as each ends (see filltest.Dir; BENCH_KEEP=1 keeps them).
// A wake child of BenchmarkWakeFloor runs as the child instead.
func TestMain(m *testing.M) {
	if sock := os.Getenv(wakeChildEnv); sock != "" {
		heap, _ := strconv.Atoi(os.Getenv(wakeHeapEnv))
		wakeChild(sock, heap)
		os.Exit(0)
	}
	code := m.Run()
	filltest.RemoveAll()
	os.Exit(code)
}
