package lab

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
)

// printSweep prints the server's sweep of the whole mesh (SPEC §6.2), as
// `mesh-provisioner sweep` does. A client writes its needs a moment after
// its report, so the sweep is asked again (for up to 3 s) until every
// module reported has its needs in.
func printSweep(ctx context.Context, out io.Writer, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	deadline := time.Now().Add(3 * time.Second)
	for {
		r, err := server.AskSweep(ctx, nc, "", "", "")
		if err != nil {
			return err
		}
		n := r.Summary.Needs
		if (n.Waiting+n.StoodAsked+n.Failed > 0 || r.Summary.Waiting+r.Summary.Failed == 0) || time.Now().After(deadline) {
			fmt.Fprintln(out, "the sweep of the mesh (mesh-provisioner sweep):")
			server.WriteSweep(out, r)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}
