package main

import (
	"io"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestLogLevelSaysWhatIsLogged: `--log-level debug` shows mesh-fill's
// debug lines (a file found unchanged at a refill), which its default
// (info) leaves out; a level out of shape is refused before serving. Before, mesh-fill had no
// --log-level (the other commands have one): its debug lines, such as
// "a connection over --max-conns refused" one by one, could not be seen.
func TestLogLevelSaysWhatIsLogged(t *testing.T) {
	req := fill.Request{Module: "m", Files: []fill.File{{Path: "/a.conf", Form: fill.FormOwned, Content: []byte("a\n")}}}
	for _, tc := range []struct {
		level     string
		unchanged bool
	}{{"", false}, {"debug", true}} {
		args := []string{"--root", t.TempDir()}
		if tc.level != "" {
			args = append(args, "--log-level", tc.level)
		}
		p := start(t, args...)
		if !p.running() {
			t.Fatalf("--log-level %q: exited; stderr:\n%s", tc.level, p.said())
		}
		c := &fill.Client{Socket: p.sock}
		for range 2 {
			if _, err := c.Fill(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		c.CloseIdle()
		said := p.said()
		if got := strings.Contains(said, `"action":"unchanged"`); got != tc.unchanged {
			t.Errorf("--log-level %q: the file found unchanged said %v, want %v; stderr:\n%s", tc.level, got, tc.unchanged, said)
		}
		if !strings.Contains(said, `"action":"written"`) {
			t.Errorf("--log-level %q: the file written not said; stderr:\n%s", tc.level, said)
		}
	}
	err := run(t.Context(), []string{"serve", "--socket", t.TempDir() + "/s", "--state-dir", t.TempDir(), "--log-level", "loud"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--log-level "loud" is not a log level`) {
		t.Errorf("--log-level loud: %v", err)
	}
}
