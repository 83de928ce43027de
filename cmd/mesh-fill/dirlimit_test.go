package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestARequestInMoreDirectoriesThanTheOpenFileLimitAllowsIsRefused:
// with an open-file limit of 1024 (whatever --max-requests), a request may have
// files in (1024 - 128) - 256 - 16 = 624 directories, which the start
// says. One of files in 1,000 directories is refused (400) naming that
// limit, and nothing of it is written; one in 600 is written. Before, the
// 1,000 failed half-way, a 500 of "too many open files".
func TestARequestInMoreDirectoriesThanTheOpenFileLimitAllowsIsRefused(t *testing.T) {
	t.Setenv("MESH_FILL_NOFILE", "1024")
	root := t.TempDir()
	p := start(t, "--root", root, "--max-requests", "8")
	if !p.running() {
		t.Fatalf("exited; stderr:\n%s", p.said())
	}
	if want := `"max_dirs_per_request":624`; !strings.Contains(p.said(), want) {
		t.Errorf("the start does not say %s:\n%s", want, p.said())
	}
	c := &fill.Client{Socket: p.sock}
	defer c.CloseIdle()
	in := func(module string, dirs int) fill.Request {
		req := fill.Request{Module: module, Whole: true}
		for i := range dirs {
			req.Files = append(req.Files, fill.File{Path: fmt.Sprintf("/%s/d%d/f.conf", module, i), Form: fill.FormOwned, Content: []byte("x\n")})
		}
		return req
	}

	_, err := c.Fill(t.Context(), in("big", 1000))
	var se *fill.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, "files in 1000 directories") ||
		!strings.Contains(se.Msg, "may have 624 (its open-file limit 1024") {
		t.Errorf("files in 1,000 directories: %v; stderr:\n%.2000s", err, p.said())
	}
	mustNotExist(t, filepath.Join(root, "big"))

	if _, err := c.Fill(t.Context(), in("small", 600)); err != nil {
		t.Fatalf("files in 600 directories: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "small/d599/f.conf")); err != nil || string(b) != "x\n" {
		t.Errorf("small/d599/f.conf: %q %v", b, err)
	}
	if _, err := c.Delete(t.Context(), "small"); err != nil {
		t.Errorf("DELETE of the module in 600 directories: %v", err)
	}
	mustNotExist(t, filepath.Join(root, "small/d0/f.conf"))
}

func mustNotExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s is there (%v)", p, err)
	}
}

// TestTheStartSweepsEveryModulesDirectoriesWhateverTheirNumber: two
// modules with files in 600 directories each, under an open-file limit of
// 1024, both have the stale temp file beside their last file removed at
// start. Before, the start opened every module's directories at once, and
// those past the limit were not swept (the temp file, which may hold a
// secret, stayed).
func TestTheStartSweepsEveryModulesDirectoriesWhateverTheirNumber(t *testing.T) {
	t.Setenv("MESH_FILL_NOFILE", "1024")
	root, state := t.TempDir(), t.TempDir()
	p := start(t, "--root", root, "--state-dir", state, "--max-requests", "1")
	c := &fill.Client{Socket: p.sock}
	for _, m := range []string{"a", "b"} {
		req := fill.Request{Module: m, Whole: true}
		for i := range 600 {
			req.Files = append(req.Files, fill.File{Path: fmt.Sprintf("/%s/d%03d/f.conf", m, i), Form: fill.FormOwned, Content: []byte("x\n")})
		}
		if _, err := c.Fill(t.Context(), req); err != nil {
			t.Fatalf("module %s: %v", m, err)
		}
	}
	c.CloseIdle()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.said())
	}
	var stale []string
	for _, m := range []string{"a", "b"} {
		tmp := filepath.Join(root, m, "d599", ".f.conf.mesh-fill-tmp-0123456789abcdef")
		if err := os.WriteFile(tmp, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, tmp)
	}
	p = start(t, "--root", root, "--state-dir", state, "--max-requests", "1")
	if !p.running() {
		t.Fatalf("exited; stderr:\n%s", p.said())
	}
	for _, tmp := range stale {
		mustNotExist(t, tmp)
	}
}
