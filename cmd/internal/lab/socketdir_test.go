package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestALongTMPDIRStillHoldsTheSockets: a --dir too long for the sockets'
// paths moves them to a temporary directory; when $TMPDIR is a long path
// too (a CI runner's workspace, a test's temp dir), the lab uses /tmp
// rather than fail, and removes it when it stops.
func TestALongTMPDIRStillHoldsTheSockets(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("t", 90))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	dir := filepath.Join(labDir(t), strings.Repeat("d", 100))
	before, _ := filepath.Glob("/tmp/mesh-lab-*")
	var out bustest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := Run(ctx, Config{Dir: dir, Port: 0, Once: true, Out: &out, Log: zerolog.Nop()}); err != nil {
		t.Fatalf("a lab with a long --dir and a long TMPDIR: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "control /tmp/mesh-lab-") {
		t.Errorf("the sockets are not under /tmp/mesh-lab-…:\n%s", out.String())
	}
	after, _ := filepath.Glob("/tmp/mesh-lab-*")
	if len(after) > len(before) {
		t.Errorf("the lab left %v (before: %v)", after, before)
	}
}
