package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// stopWait bounds how long the lab waits for one part to stop.
const stopWait = 15 * time.Second

// part is something running in a goroutine until its context ends.
type part struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// start runs fn in a goroutine with a context of its own.
func start(name string, fn func(ctx context.Context) error) *part {
	ctx, cancel := context.WithCancel(context.Background())
	p := &part{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = fn(ctx)
	}()
	return p
}

// stop ends the part and waits for it (at most stopWait).
func (p *part) stop(log zerolog.Logger) {
	p.cancel()
	select {
	case <-p.done:
		if p.err != nil {
			log.Warn().Err(p.err).Str("part", p.name).Msg("stopped with an error")
		}
	case <-time.After(stopWait):
		log.Warn().Str("part", p.name).Dur("waited", stopWait).Msg("did not stop in time")
	}
}

// programCommand is what a lab fill server runs instead of systemctl: a
// shell appending "<action> <unit> on <node>" to the programs log (the fill
// server appends the action and the unit to the command).
func programCommand(node, logPath string) []string {
	return []string{"sh", "-c", `printf '%s %s on %s\n' "$3" "$4" "$1" >> "$2"`, "mesh-lab", node, logPath}
}

// startFill runs node's fill server confined to its root, with the
// example unit's allow-lists (the paths and units of the example modules)
// and its own state dir, and waits for its socket.
func startFill(l *layout, node string, log zerolog.Logger) (*part, error) {
	allow, units, err := examples.FillAllowLists()
	if err != nil {
		return nil, fmt.Errorf("fill server of node %s: %w", node, err)
	}
	fs := &fill.Server{
		Root:       l.root(node),
		Command:    programCommand(node, l.programs()),
		Log:        log.With().Str("part", "mesh-fill").Str("node", node).Logger(),
		Allow:      allow,
		AllowUnits: units,
		StateDir:   l.fillState(node),
	}
	sock := l.fill(node)
	p := start("mesh-fill "+node, func(ctx context.Context) error { return fs.Serve(ctx, sock) })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("fill server of node %s: %w", node, p.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop(log)
			return nil, fmt.Errorf("fill server of node %s: socket %s not there within 5s", node, sock)
		}
	}
}

// startClient runs node's client as user provisioner-<node>, with its creds.
func startClient(s *natsBus, l *layout, node string, log zerolog.Logger) (*part, error) {
	user := "provisioner-" + node
	d, err := daemon.New(daemon.Config{
		Node:       node,
		Bus:        bus.Options{URL: s.ClientURL(), Creds: s.creds(user)},
		FillSocket: l.fill(node),
		StateDir:   l.state(node),
		Control:    l.control(node),
		Refill:     time.Minute,
		Log:        log.With().Str("part", "client").Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("client of node %s: %w", node, err)
	}
	return start("client "+node, d.Run), nil
}

// logEnd is where the programs log at path ends now (0: no log yet):
// where tailPrograms starts, taken before any fill server runs, as a kept
// lab's log holds what earlier labs ran, which this one did not.
func logEnd(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// tailPrograms copies each line the fill servers' command appends to the
// programs log after off to out, until ctx ends.
func tailPrograms(ctx context.Context, path string, off int64, out io.Writer) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		off = copyNewLines(path, off, out)
	}
}

// copyNewLines writes the complete lines of path after off to out and
// returns the offset after them.
func copyNewLines(path string, off int64, out io.Writer) int64 {
	f, err := os.Open(path)
	if err != nil {
		return off
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return off // a partial line is read again next time
		}
		off += int64(len(line))
		fmt.Fprintf(out, "  program: %s", line)
	}
}
