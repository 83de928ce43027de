package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// /healthz's status code is what a probe reads (docs/DESIGN.md, "What an
// operator sees"): 503 while this client cannot do its job on this node
// (the bus gone, the fill socket not answering), 200 while a mesh-wide
// service it waits on (the vault) is silent: its modules wait and say so,
// and /metrics counts the silence, but every node of the fleet turning
// unhealthy at once for one vault tells an operator nothing more.
func TestHealthzFailsWhileTheFillSocketDoesNotAnswerButNotForASilentVault(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	p, tm := oneFile("sec", "token = ${secret:tok}\n")
	p.Secrets = []nodes.SecretSpec{{Name: "tok", Path: "/etc/sec/tok"}}
	m.assign("ace", "sec", p, tm) // no vault runs: asks are not answered
	sock := ctlSock(t)
	m.client("ace", withControl(sock), f.socket)
	m.waitState("ace", "web", "applied")
	m.waitWaiting("ace", "sec", "no answer")
	// provisioner_healthy says the same as /healthz's code, for an alert
	// (Prometheus reads /metrics, not /healthz).
	health := func(want int, says string) {
		t.Helper()
		bustest.Eventually(t, 10*time.Second, func() error {
			code, b := ctlGet(t, sock, "/healthz")
			if code != want || !strings.Contains(string(b), says) {
				return fmt.Errorf("/healthz %d %q, want %d saying %q", code, b, want, says)
			}
			healthy := metric(scrape(t, sock), "provisioner_healthy")
			if (healthy == 1) != (want == http.StatusOK) || (healthy != 0 && healthy != 1) {
				return fmt.Errorf("/healthz %d but provisioner_healthy %v", code, healthy)
			}
			return nil
		})
	}
	health(http.StatusOK, "ok")

	f.stop()
	m.put(spec.ConfigBucket, "ace.web.flavour", "lime")
	health(http.StatusServiceUnavailable, "the fill socket "+f.sock+" has not answered since ")

	f.start()
	health(http.StatusOK, "ok")
	m.waitFile("/etc/web/c.conf", "flavour = lime\n")
}

// A fill socket that takes a request and answers nothing (a node-engine
// that hangs) makes the client unhealthy once the request has waited
// Config.FillHang, long before the request's own timeout, and healthy
// again once the socket answers.
func TestHealthzFailsWhileAFillRequestWaitsLongForAnAnswer(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	gate, release := m.fillGate(m.sock)
	defer release()
	sock := ctlSock(t)
	m.client("ace", withControl(sock), func(c *Config) {
		c.FillSocket, c.FillTimeout, c.FillHang = gate, time.Minute, time.Second
	})
	health := func(want int, says string) {
		t.Helper()
		bustest.Eventually(t, 10*time.Second, func() error {
			code, b, err := ctlTry(sock, "/healthz")
			if err != nil {
				return err
			}
			if code != want || !strings.Contains(string(b), says) {
				return fmt.Errorf("/healthz %d %q, want %d saying %q", code, b, want, says)
			}
			if healthy := metric(scrape(t, sock), "provisioner_healthy"); (healthy == 1) != (want == http.StatusOK) {
				return fmt.Errorf("/healthz %d but provisioner_healthy %v", code, healthy)
			}
			return nil
		})
	}
	health(http.StatusServiceUnavailable, "the fill socket "+gate+" has answered nothing since ")
	release()
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	health(http.StatusOK, "ok")
}

// A module taken off while the node-engine does not answer: its files stay
// on disk until the DELETE is answered (SPEC §4.7, tried again at every
// tick), and the client says so — /healthz 503 as for a fill, the fill
// socket's errors counted, /v1/modules and status listing the module whose
// removal waits. Before, it read healthy, with 0 errors counted and "0
// modules", its departed modules' files still there (an outside audit).
func TestARemovalTheNodeEngineDoesNotAnswerIsSaid(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock), f.socket)
	m.waitState("ace", "web", "applied")

	f.stop()
	m.del(spec.AssignmentsBucket, "ace.web")
	bustest.Eventually(t, 10*time.Second, func() error {
		code, b := ctlGet(t, sock, "/healthz")
		if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "the fill socket "+f.sock+" has not answered since ") {
			return fmt.Errorf("/healthz %d %q", code, b)
		}
		if n := metric(scrape(t, sock), "provisioner_fill_socket_errors_total"); n < 1 {
			return fmt.Errorf("fill socket errors %v", n)
		}
		var ms struct{ Removing []string }
		if _, b := ctlGet(t, sock, "/v1/modules"); json.Unmarshal(b, &ms) != nil || !slices.Equal(ms.Removing, []string{"web"}) {
			return fmt.Errorf("/v1/modules %s, want web removing", b)
		}
		return nil
	})
	if _, _, err := m.file("/etc/web/a.conf"); err != nil {
		t.Fatalf("web's file went with the node-engine away: %v", err)
	}

	f.start()
	m.waitNoFile("/etc/web/a.conf")
	bustest.Eventually(t, 10*time.Second, func() error {
		if code, b := ctlGet(t, sock, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", code, b)
		}
		var ms struct{ Removing []string }
		if _, b := ctlGet(t, sock, "/v1/modules"); json.Unmarshal(b, &ms) != nil || ms.Removing == nil || len(ms.Removing) > 0 {
			return fmt.Errorf("/v1/modules %s, want none removing", b)
		}
		return nil
	})
}

// The state dir removed while the client runs is made again and taken at
// the refill tick, said at warn level: its lock went with it, and a second
// client started on the path took it unsaid (an outside audit).
func TestAStateDirRemovedWhileTheClientRunsIsTakenAgain(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := filepath.Join(t.TempDir(), "state")
	m.client("ace", func(c *Config) { c.StateDir = state }, refillEvery(300*time.Millisecond))
	m.waitState("ace", "web", "applied")
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(m.logs.String(), "state dir gone while the client ran: made again and taken") {
			return fmt.Errorf("not said")
		}
		return nil
	})
	if _, err := lockStateDir(state, "bee"); err == nil || !strings.Contains(err.Error(), "in use by another mesh-provisioner-client") {
		t.Fatalf("a second client on the state dir made again: %v, want it refused", err)
	}
}
