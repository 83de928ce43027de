package fill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A 500 whose request was carried out, its files in place, and whose
// restart failed says so ("program_failed": true beside "error"), and so
// does the module's next request, which runs the restart still owed and
// fails the same way: the client tries it again with backoff, not at
// every tick. A 500 of mesh-fill's own (a write failing, nothing of the
// request in place) does not say it, nor does one failing after the
// renames (the program not run yet): those are tried at every tick.
func TestAFailedProgramIsSaidApartFromMeshFillsOwnFailure(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	ran := filepath.Join(t.TempDir(), "runs")
	var failWrite, failAfter atomic.Bool
	s := &Server{Root: root, StateDir: state,
		Command: []string{"sh", "-c", fmt.Sprintf(`echo "$0 $1" >> %s; echo "unit $1 failed to start" >&2; exit 3`, ran)}}
	s.write = func(ds *dirs, steps []step) error {
		if failWrite.Load() {
			return errors.New("injected before the renames")
		}
		if err := writeAll(ds, steps, DefaultSyncFSFrom); err != nil {
			return err
		}
		if failAfter.Load() {
			return errors.New("injected after the renames")
		}
		return nil
	}
	c := startServer(t, s)
	req := func(content string) Request {
		return Request{Module: "a", Files: []File{{Path: "/app.conf", Form: FormOwned, Content: []byte(content),
			OnChange: OnChange{Action: OnChangeRestart, Unit: "app.service"}}}}
	}
	said := func(err error) (status int, programFailed bool) {
		t.Helper()
		se, ok := errors.AsType[*StatusError](err)
		if !ok {
			t.Fatalf("want a StatusError, got %v", err)
		}
		return se.Status, se.ProgramFailed
	}

	_, err := c.Fill(t.Context(), req("v1\n"))
	if st, pf := said(err); st != http.StatusInternalServerError || !pf {
		t.Errorf("a failed restart: %d, program failed %v; want 500 saying so (%v)", st, pf, err)
	}
	wantStatus(t, err, http.StatusInternalServerError, "unit app.service failed to start")
	mustRead(t, filepath.Join(root, "app.conf"), "v1\n")
	_, err = c.Fill(t.Context(), req("v1\n")) // unchanged: the restart still owed runs, and fails
	if st, pf := said(err); st != http.StatusInternalServerError || !pf {
		t.Errorf("the restart owed, failed again: %d, program failed %v; want 500 saying so (%v)", st, pf, err)
	}
	if got := runs(t, ran); len(got) != 2 {
		t.Errorf("programs run %q, want two restarts", got)
	}
	// On the wire, beside SPEC §4.3's "error".
	body := postRaw(t, c.Socket, req("v1\n"))
	if !strings.Contains(body, `"program_failed":true`) || !strings.Contains(body, `"error":`) {
		t.Errorf("the 500's body %s, want error and program_failed", body)
	}

	failWrite.Store(true)
	_, err = c.Fill(t.Context(), req("v2\n"))
	if st, pf := said(err); st != http.StatusInternalServerError || pf {
		t.Errorf("a write failing, nothing in place: %d, program failed %v; want a 500 not saying so (%v)", st, pf, err)
	}
	mustRead(t, filepath.Join(root, "app.conf"), "v1\n")
	failWrite.Store(false)

	failAfter.Store(true)
	_, err = c.Fill(t.Context(), req("v3\n"))
	if st, pf := said(err); st != http.StatusInternalServerError || pf {
		t.Errorf("a failure after the renames: %d, program failed %v; want a 500 not saying so (%v)", st, pf, err)
	}
}

// postRaw posts req to the fill socket at sock and returns the answer's
// body as it came.
func postRaw(t *testing.T, sock string, req Request) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post("http://fill"+FillPath, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return string(out)
}
