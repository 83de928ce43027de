package control

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// What net/http says of the control socket's connections (a handler's
// panic, an accept error such as too many open files) goes to the
// daemon's log, not to the standard logger's plain text on stderr, so
// every line of the client's stderr stays one JSON object (SPEC §5.1).
func TestTheControlServersOwnErrorsGoToTheDaemonsLog(t *testing.T) {
	var std bustest.Buffer
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "c.sock")
	var said bustest.Buffer
	stop, err := Serve(path, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("a bug") }), nil,
		ErrorLog(zerolog.New(&said)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	NewClient(path, 2*time.Second).Get(context.Background(), "/healthz") // the panic cuts the connection
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(said.String(), "a bug") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var line struct{ Level, Message string }
	if err := json.Unmarshal([]byte(said.String()), &line); err != nil || std.String() != "" ||
		line.Level != "warn" || !strings.HasPrefix(line.Message, "http: panic serving") {
		t.Fatalf("the standard logger got %q; the daemon's %q (%v)", std.String(), said.String(), err)
	}
}
