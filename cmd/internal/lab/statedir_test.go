package lab

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestEachClientsStateDirIsItsOwnersAlone: the README says a client's
// --state-dir is made 0700; the lab's clients show the same, whether the
// sockets sit beside it or (a --dir too long for them) elsewhere.
func TestEachClientsStateDirIsItsOwnersAlone(t *testing.T) {
	dir := labDir(t)
	var out bustest.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := Run(ctx, Config{Dir: dir, Port: 0, Once: true, Out: &out, Log: zerolog.Nop()}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	l, err := newLayout(dir, []string{"ace", "g14"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range l.nodes {
		fi, err := os.Stat(l.state(n))
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o700 {
			t.Errorf("%s's state dir %s is %#o, want 0700 (as a client makes its --state-dir)", n, l.state(n), m)
		}
	}
}
