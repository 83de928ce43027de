package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// A client that has not reached its bus answers /v1/modules with no
// module, and says why: "0 modules on node n9." alone read as a node with
// nothing assigned (an outside audit's finding). The status text says it
// under the count.
func TestModulesOfAClientNotReadySayWhy(t *testing.T) {
	sock := ctlSock(t)
	d, err := New(Config{Node: "n9", Bus: bus.Options{URL: "nats://127.0.0.1:1"}, Control: sock,
		StateDir: filepath.Join(t.TempDir(), "state"), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the client did not stop")
		}
	})
	var ms control.Modules
	bustest.Eventually(t, 10*time.Second, func() error {
		if _, err := os.Stat(sock); err != nil {
			return err
		}
		code, b, err := ctlTry(sock, "/v1/modules")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			t.Fatalf("/v1/modules: %d %s", code, b)
		}
		return json.Unmarshal(b, &ms)
	})
	if len(ms.Modules) != 0 || !slices.Contains(ms.NotReady, "the bus is not connected") {
		t.Fatalf("/v1/modules of a client off its bus: %+v", ms)
	}
	var st strings.Builder
	if err := control.WriteStatus(&st, &ms); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.String(), "0 modules on node n9.\nNot ready: the bus is not connected") {
		t.Errorf("status:\n%s", st.String())
	}

	// Explain and DOT of a module: the client cannot tell whether it is
	// assigned, and says so (503), not that no module is (404).
	for _, path := range []string{"/v1/explain?module=web", "/v1/graph.dot?module=web"} {
		code, b, err := ctlTry(sock, path)
		if err != nil || code != http.StatusServiceUnavailable ||
			!strings.Contains(string(b), "not ready: the bus is not connected") || !strings.Contains(string(b), "cannot tell yet whether module web is on node n9") {
			t.Errorf("%s of a client off its bus: %d %s %v", path, code, b, err)
		}
	}
}

// explain of a module while the bus is away says so, as status does: what
// it shows is what the client last knew, and nothing moves until the bus
// is back (an "applied" read then is no word on the node now).
func TestExplainWhileTheBusIsAwaySaysTheClientIsNotReady(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	if e, text := explainOf(t, sock, "web"); len(e.NotReady) > 0 || strings.Contains(text, "Not ready") {
		t.Fatalf("explain of a ready client says it is not ready:\n%s", text)
	}
	m.busDown()
	bustest.Eventually(t, 10*time.Second, func() error {
		e, text, err := explainTry(sock, "web")
		if err != nil {
			return err
		}
		if e.State != "applied" || !slices.Contains(e.NotReady, "the bus is not connected") ||
			!strings.HasSuffix(text, "Not ready (the bus is not connected): this is what the client last knew.\n") {
			return fmt.Errorf("explain with the bus away: %+v\n%s", e.NotReady, text)
		}
		return nil
	})
}
