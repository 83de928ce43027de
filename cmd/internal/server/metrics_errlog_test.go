package server

import (
	"encoding/json"
	"log"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// flakyListener fails its first Accept as a process out of file
// descriptors does (EMFILE, which net/http retries and logs).
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failed.CompareAndSwap(false, true) {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// What net/http says of the /metrics server's connections (an accept
// error such as too many open files, a handler's panic) goes to the
// server's own log as one structured warning naming the metrics server,
// not to the standard logger's plain text on stderr, so every line the
// server writes stays one JSON object an operator's log pipeline reads.
func TestTheMetricsServersOwnErrorsGoToTheServersLog(t *testing.T) {
	var std bustest.Buffer
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	s := bustest.Start(t)
	nc := bustest.Connect(t, s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var said bustest.Buffer
	g := serveMetrics(&flakyListener{Listener: ln}, nc, zerolog.New(&said))
	defer g.stop()
	var warning string
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, l := range strings.Split(said.String(), "\n") {
			if strings.Contains(l, "too many open files") {
				warning = l
				return nil
			}
		}
		return os.ErrNotExist
	})
	var line struct{ Level, Component, Message string }
	if err := json.Unmarshal([]byte(warning), &line); err != nil || line.Level != "warn" ||
		line.Component != "metrics" || !strings.HasPrefix(line.Message, "http: Accept error") {
		t.Errorf("the server's log says %q (%v); want a warning of component metrics, message http: Accept error …", warning, err)
	}
	if std.String() != "" {
		t.Errorf("the standard logger got %q", std.String())
	}
}
