package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestAnEmptySocketIsRefusedNamingTheFlag: `--socket ""` (a unit's
// variable left empty) is refused before anything is read or locked, with
// a message naming the flag, not a bind's "rename .sock-N/s : no such file
// or directory" after the state dir was taken.
func TestAnEmptySocketIsRefusedNamingTheFlag(t *testing.T) {
	state := t.TempDir() + "/state"
	err := run(t.Context(), []string{"serve", "--socket", "", "--state-dir", state}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--socket: empty") {
		t.Fatalf("error %v, want one saying --socket: empty", err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state dir was made before the socket was refused: %v", err)
	}
}

// TestAnAllowGlobNoPathCanMatchExitsNonZeroSayingSo: an --allow glob that
// is not a clean path (a trailing slash, "//", "." or "..") matches no
// path a request may name (every path is refused unless clean), so
// mesh-fill running with it would answer every request for that tree 403.
// It stops at start with exit 2 naming the glob and the clean form, as a
// glob that is not absolute does.
func TestAnAllowGlobNoPathCanMatchExitsNonZeroSayingSo(t *testing.T) {
	for _, tc := range []struct{ glob, says string }{
		{"/etc/myapp/", `--allow "/etc/myapp/" is not a clean path glob (a request's paths are clean: "/etc/myapp"; what is below the directory is "/etc/myapp/**")`},
		{"/etc//myapp/*", `--allow "/etc//myapp/*" is not a clean path glob`},
		{"/etc/./myapp/**", `--allow "/etc/./myapp/**" is not a clean path glob`},
		{"/etc/myapp/../x", `--allow "/etc/myapp/../x" is not a clean path glob`},
	} {
		p := start(t, "--allow", tc.glob)
		if code := p.exit(t); code != 2 {
			t.Errorf("--allow %s: exit %d, want 2; stderr:\n%s", tc.glob, code, p.said())
		}
		if !strings.Contains(p.said(), tc.says) {
			t.Errorf("--allow %s: stderr should say %q:\n%s", tc.glob, tc.says, p.said())
		}
		mustNotExist(t, p.sock)
	}
}

// TestAnAllowUnitGlobNoUnitCanMatchExitsNonZeroSayingSo: --allow-unit
// a.service,b.service (written as --allow-uid's comma list) or a glob
// holding a space matches no unit a request may name (a unit name is
// letters, digits and ":-_.@\"), so every restart would be a 403. mesh-fill
// stops at start with exit 2 naming the glob and that the flag repeats.
func TestAnAllowUnitGlobNoUnitCanMatchExitsNonZeroSayingSo(t *testing.T) {
	p := start(t, "--allow-unit", "a.service,b.service")
	if code := p.exit(t); code != 2 {
		t.Errorf("exit %d, want 2; stderr:\n%s", code, p.said())
	}
	if want := `--allow-unit "a.service,b.service" holds ",", which no unit name holds (letters, digits and ":-_.@\"; the flag repeats, one glob each)`; !strings.Contains(p.said(), want) {
		t.Errorf("stderr should say %q:\n%s", want, p.said())
	}
	mustNotExist(t, p.sock)
	err := run(t.Context(), []string{"serve", "--socket", t.TempDir() + "/s", "--state-dir", t.TempDir() + "/st", "--allow-unit", "a.service b.service"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--allow-unit "a.service b.service" holds " "`) {
		t.Errorf("a glob holding a space: error %v", err)
	}
}

// TestNoSystemctlIsSaidAtStart: without --on-change-command mesh-fill runs
// systemctl; on a machine without it (a container, a lab) every restart or
// reload would be a 500 after its files were written, found only at the
// first. mesh-fill says so at start (a warning naming --on-change-command)
// and serves on: a module without on_change needs neither.
func TestNoSystemctlIsSaidAtStart(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := start(t)
	if want := "systemctl not found"; !strings.Contains(p.said(), want) || !strings.Contains(p.said(), "--on-change-command") {
		t.Errorf("stderr should warn %q naming --on-change-command:\n%s", want, p.said())
	}
	if !p.running() {
		t.Errorf("mesh-fill stopped:\n%s", p.said())
	}
}
