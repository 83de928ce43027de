package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Fills run off the loop (issue 19.5): a node-engine that is slow, or does
// not answer at all, holds up neither the control socket, nor prov.ask,
// nor another module, nor a stop.

// hangingFill is a fill socket that accepts every request and never
// answers (a broken node-engine): an http server on a unix socket whose
// handler waits until the client gives up. Each request reached is sent
// on the channel returned.
func hangingFill(t *testing.T) (string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hang") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan string, 64)
	stop := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reached <- r.Method + " " + r.URL.Path:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(stop); srv.Close() })
	return sock, reached
}

// within says whether stop returned within limit.
func within(limit time.Duration, stop func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); stop() }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

func fillSocket(sock string) clientOpt { return func(c *Config) { c.FillSocket = sock } }

func TestAFillSocketThatNeverAnswersHoldsUpNeitherTheControlSocketNorProvAskNorAStop(t *testing.T) {
	m := newMesh(t)
	hang, reached := hangingFill(t)
	m.webModule()
	sock := ctlSock(t)
	_, stop := m.startClient("ace", fillSocket(hang), withControl(sock))
	select {
	case <-reached: // web's fill is in flight, and will be for the client's 30 s
	case <-time.After(10 * time.Second):
		t.Fatal("no fill reached the socket")
	}

	// A liveness deadline, not a measure of speed: the loop answers within
	// 1 s while the fill waits (it waited up to 30 s for it).
	ctl := control.NewClient(sock, time.Second)
	for i := range 3 {
		m.put(spec.ConfigBucket, "ace.web.model", fmt.Sprint("model-", i)) // a batch while the fill is in flight
		code, b, err := ctl.Get(context.Background(), "/v1/modules")
		if err != nil || code != http.StatusOK || !strings.Contains(string(b), `"web"`) {
			t.Fatalf("/v1/modules while a fill hangs: %d %s %v", code, b, err)
		}
		msg, err := m.nc.Request("prov.ask.ace", []byte(`{"module":"web","kind":"config","key":"flavour"}`), time.Second)
		if err != nil || !strings.Contains(string(msg.Data), "vanilla") {
			t.Fatalf("prov.ask while a fill hangs: %v %v", msg, err)
		}
	}
	if !within(2*time.Second, stop) {
		t.Fatal("Run did not return within 2 s of its cancel while a fill hung")
	}
}

func TestAModuleWhoseProgramTakesSecondsToRestartHoldsUpNoOtherModule(t *testing.T) {
	m := newMesh(t)
	dir := filepath.Dir(m.sock)
	sock, log, slow := filepath.Join(dir, "slow-fill.sock"), filepath.Join(dir, "programs.log"), filepath.Join(dir, "slow")
	// The program of slow.service takes 5 s to restart once the flag file
	// slow is there; each restart's start and end is a line of log.
	script := fmt.Sprintf(`echo "$1 start" >> %[1]s; if [ "$1" = slow.service ] && [ -e %[2]s ]; then sleep 5; fi; echo "$1 done" >> %[1]s`, log, slow)
	fs := &fill.Server{Root: m.root, OnRequest: m.fills.add, Command: []string{"sh", "-c", script}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); fs.Serve(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-served })
	bustest.Eventually(t, 5*time.Second, func() error { _, err := os.Stat(sock); return err })

	conf := func(module string) nodes.Plan {
		return nodes.Plan{Files: []nodes.FileSpec{owned("/etc/"+module+".conf", "conf", module+".service")}}
	}
	m.put(spec.ConfigBucket, "ace.slow.v", "1")
	m.put(spec.ConfigBucket, "ace.fast.v", "1")
	m.assign("ace", "slow", conf("slow"), map[string]string{"conf": "v=${config:v}\n"})
	m.assign("ace", "fast", conf("fast"), map[string]string{"conf": "v=${config:v}\n"})
	m.client("ace", fillSocket(sock))
	m.waitFile("/etc/slow.conf", "v=1\n")
	m.waitFile("/etc/fast.conf", "v=1\n")
	m.waitState("ace", "fast", "applied")
	m.waitState("ace", "slow", "applied")

	os.WriteFile(slow, nil, 0o644)
	m.put(spec.ConfigBucket, "ace.slow.v", "2")
	programs := func() string { b, _ := os.ReadFile(log); return string(b) }
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := strings.Count(programs(), "slow.service start"); n != 2 {
			return fmt.Errorf("slow.service restarted %d times", n)
		}
		return nil
	})
	m.put(spec.ConfigBucket, "ace.fast.v", "2")
	m.waitFile("/etc/fast.conf", "v=2\n")
	if n := strings.Count(programs(), "slow.service done"); n != 1 {
		t.Fatalf("fast's change was filled only once slow's restart was over:\n%s", programs())
	}
	m.waitFile("/etc/slow.conf", "v=2\n")
	m.waitState("ace", "fast", "applied")
}
