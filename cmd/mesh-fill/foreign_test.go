package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// foreignClient speaks to a fill socket as a node-engine client written
// from SPEC §4.3 alone would: net/http over a unix dialer, raw JSON.
func foreignClient(t *testing.T, sock string) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// foreignDo sends body (JSON text) with method to path and returns the
// status and the answer decoded as a generic JSON object.
func foreignDo(t *testing.T, c *http.Client, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://fill"+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s %s: %d %q is no JSON object: %v", method, path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, got
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestTheProgramAnswerNamesTheUnitActedOn: SPEC §4.3's answer names one
// program, restarted, reloaded or none. A request naming two units, whose
// second unit alone had a file changed (and was reloaded), answered
// "program": {first unit, "none"}: a client reading the answer as the SPEC
// shows it was told nothing was restarted or reloaded.
func TestTheProgramAnswerNamesTheUnitActedOn(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	runs, prog := filepath.Join(dir, "runs"), filepath.Join(dir, "on-change")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$1 $2\" >> "+runs+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := start(t, "--root", root, "--on-change-command", prog)
	c := foreignClient(t, p.sock)
	body := func(two string) string {
		return `{"module": "app", "whole": true, "files": [
			{"path": "/etc/app/one.conf", "form": "owned", "content": "` + b64("one\n") + `", "mode": "0644",
			 "on_change": {"action": "restart", "unit": "one.service"}},
			{"path": "/etc/app/two.conf", "form": "owned", "content": "` + b64(two) + `", "mode": "0644",
			 "on_change": {"action": "reload", "unit": "two.service"}}]}`
	}
	if status, got := foreignDo(t, c, http.MethodPost, "/v1/fill", body("two\n")); status != http.StatusOK {
		t.Fatalf("first fill: %d %v", status, got)
	}
	status, got := foreignDo(t, c, http.MethodPost, "/v1/fill", body("two, changed\n"))
	if status != http.StatusOK {
		t.Fatalf("second fill: %d %v", status, got)
	}
	if b, _ := os.ReadFile(runs); string(b) != "restart one.service\nreload two.service\nreload two.service\n" {
		t.Fatalf("runs %q", b)
	}
	want := map[string]any{"unit": "two.service", "action": "reloaded"}
	if pr, _ := got["program"].(map[string]any); len(pr) != 2 || pr["unit"] != want["unit"] || pr["action"] != want["action"] {
		t.Errorf("program %v, want %v (the answer: %v)", got["program"], want, got)
	}
}

// TestABlockHoldingAMarkerIsRefusedNamingTheMarkersAsTheyAre: the refusal
// of managed-block content holding a marker line named the markers
// "# BEGIN mesh<module>" and "# END mesh<module>", not as SPEC §3 writes
// them (and as mesh-fill writes them), with a space before the module.
func TestABlockHoldingAMarkerIsRefusedNamingTheMarkersAsTheyAre(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root)
	c := foreignClient(t, p.sock)
	status, got := foreignDo(t, c, http.MethodPost, "/v1/fill", `{"module": "app", "files": [
		{"path": "/etc/app.conf", "form": "managed-block", "content": "`+b64("# END mesh other\nx\n")+`"}]}`)
	msg, _ := got["error"].(string)
	if status != http.StatusBadRequest || !strings.Contains(msg, `"# BEGIN mesh <module>" or "# END mesh <module>"`) {
		t.Errorf("%d %q", status, msg)
	}
	if _, err := os.Stat(filepath.Join(root, "etc", "app.conf")); !os.IsNotExist(err) {
		t.Errorf("written: %v", err)
	}
}
