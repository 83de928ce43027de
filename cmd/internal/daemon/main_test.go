package daemon

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("BENCH_KEEP") == "" {
		removeBenchDirs()
	}
	os.Exit(code)
}
