package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestBadFlagsAreRefusedBeforeServing: a flag out of shape is an error that
// names it, and nothing is served.
func TestBadFlagsAreRefusedBeforeServing(t *testing.T) {
	sock := t.TempDir() + "/fill.sock"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--socket", sock, "--syncfs-from", "-1"}, "--syncfs-from -1: want 0 (never) or a number of files"},
		{[]string{"serve", "--socket", sock, "--max-requests", "0"}, "--max-requests 0: want 1 or more"},
		{[]string{"serve", "--socket", sock, "--max-conns", "0"}, "--max-conns 0: want 1 or more"},
		{[]string{"serve", "--socket", sock, "--allow-uid", "root"}, `--allow-uid: "root" is not a uid`},
		{[]string{"serve", "--socket", sock, "--log-format", "xml"}, `--log-format "xml" is not json or console`},
		{[]string{"serve", "--socket", sock, "--allow", "/etc/**", "--allow", "etc/x"}, `--allow "etc/x" is not a glob of absolute paths`},
		{[]string{"serve", "--socket", sock, "--allow", "/etc/[x"}, `--allow "/etc/[x" is not a glob`},
		{[]string{"serve", "--socket", sock, "--allow-unit", "a/b.service"}, `--allow-unit "a/b.service" is not a glob of unit names`},
		{[]string{"serve", "--socket", sock, "--state-dir", ""}, "--state-dir: empty"},
		{[]string{"serve", "--socket", sock, "--on-change-command", "/nonexistent/restart-it now"}, `--on-change-command: exec: "/nonexistent/restart-it"`},
		{[]string{"fill"}, `unknown command "fill"; usage: mesh-fill serve`},
		{[]string{}, "usage: mesh-fill serve"},
	} {
		err := run(t.Context(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %s", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("a socket was made: %v", err)
	}
}

// withStateDir is args with a --state-dir of dir unless they name one: a
// test's mesh-fill never takes the machine's /var/lib/mesh-fill (its
// lock would be another run's, or a real mesh-fill's, and its state files
// outlive the test).
func withStateDir(args []string, dir string) []string {
	if slices.Contains(args, "--state-dir") {
		return args
	}
	return append(args[:len(args):len(args)], "--state-dir", dir)
}

// serve runs mesh-fill serve with args until the test ends and returns a
// client of its socket and a reader of its stderr so far (a file: the
// server writes it while the test reads).
func serve(t *testing.T, args ...string) (c *fill.Client, stderr func() string) {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "mf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "fill.sock")
	errFile, err := os.Create(filepath.Join(sockDir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	stderr = func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = withStateDir(args, filepath.Join(sockDir, "state"))
	go func() { done <- run(ctx, append([]string{"serve", "--socket", sock}, args...), errFile, errFile) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		errFile.Close()
	})
	bustest.Eventually(t, 5*time.Second, func() error {
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("no socket; stderr:\n%s", stderr())
		}
		return nil
	})
	return &fill.Client{Socket: sock}, stderr
}

// TestAllowFlagsConfineTheServer: --allow (repeated) and --allow-unit are
// the server's allow-lists; --state-dir is where it keeps its state.
func TestAllowFlagsConfineTheServer(t *testing.T) {
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	c, stderr := serve(t, "--root", root, "--state-dir", state,
		"--allow", "/etc/app/**", "--allow", "/etc/other.conf", "--allow-unit", "app.service")
	ok := fill.File{Path: "/etc/app/a/b.conf", Form: fill.FormOwned, Content: []byte("x\n"),
		OnChange: fill.OnChange{Action: fill.OnChangeNone, Unit: "app.service"}}
	if _, err := c.Fill(t.Context(), fill.Request{Module: "m", Whole: true, Files: []fill.File{ok, {Path: "/etc/other.conf", Form: fill.FormOwned}}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []fill.File{
		{Path: "/etc/passwd", Form: fill.FormOwned},
		{Path: "/etc/app/c.conf", Form: fill.FormOwned, OnChange: fill.OnChange{Action: fill.OnChangeRestart, Unit: "sshd.service"}},
	} {
		_, err := c.Fill(t.Context(), fill.Request{Module: "m", Files: []fill.File{f}})
		var se *fill.StatusError
		if !errors.As(err, &se) || se.Status != http.StatusForbidden {
			t.Errorf("%s: %v", f.Path, err)
		}
	}
	if files, err := filepath.Glob(filepath.Join(state, "module-*.json")); err != nil || len(files) != 1 {
		t.Errorf("state dir: %v %v", files, err)
	}
	if strings.Contains(stderr(), "no --allow") {
		t.Errorf("warned with allow-lists:\n%s", stderr())
	}
}

// TestWithoutAllowTheStartSaysEveryPathIsAllowed.
func TestWithoutAllowTheStartSaysEveryPathIsAllowed(t *testing.T) {
	_, stderr := serve(t, "--root", t.TempDir(), "--state-dir", t.TempDir())
	for _, want := range []string{"no --allow: every path may be written", "no --allow-unit"} {
		if !strings.Contains(stderr(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr())
		}
	}
}

// TestHelpPrintsTheUsageAndExitsZero: -h and --help print the usage and
// exit 0, saying no error; a flag out of shape still exits 2.
func TestHelpPrintsTheUsageAndExitsZero(t *testing.T) {
	for _, tc := range []struct {
		args string
		code int
		says string
	}{
		{"serve --help", 0, "-allow-unit"},
		{"serve -h", 0, "-allow-unit"},
		{"--help", 0, "usage: mesh-fill serve"},
		{"help", 0, "usage: mesh-fill serve"}, // as mesh-provisioner's and the client's
		{"serve --no-such-flag", 2, "mesh-fill: flag provided but not defined"},
	} {
		out, err := meshFill(strings.Fields(tc.args)...).CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.says) || strings.Contains(string(out), "help requested") {
			t.Errorf("mesh-fill %s: exit %d, want %d, saying %q:\n%s", tc.args, code, tc.code, tc.says, out)
		}
	}
}

// mesh-fill's log lines carry their time as the other commands' do (UTC,
// to the millisecond: cli.TimeFormat), so a node's mesh-fill and client
// logs line up when read side by side.
func TestTheLogsTimeIsTheOtherCommands(t *testing.T) {
	_, stderr := serve(t, "--root", t.TempDir())
	var line struct {
		Time string `json:"time"`
	}
	first, _, _ := strings.Cut(stderr(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("first log line %q: %v", first, err)
	}
	at, err := time.Parse(cli.TimeFormat, line.Time)
	if err != nil || at.Location() != time.UTC || len(line.Time) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("time %q is not in cli.TimeFormat, UTC (%v)", line.Time, err)
	}
}

// TestABadFlagIsSaidOnce: a flag out of shape is said once, after the
// flags' list and led by the command's name, as the last line an
// operator sees (the flag package said it before the list too).
func TestABadFlagIsSaidOnce(t *testing.T) {
	out, err := meshFill("serve", "--no-such-flag").CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2:\n%s", err, out)
	}
	text := strings.TrimSpace(string(out))
	if n := strings.Count(text, "flag provided but not defined"); n != 1 {
		t.Errorf("the bad flag is said %d times, want once:\n%s", n, text)
	}
	lines := strings.Split(text, "\n")
	if last := lines[len(lines)-1]; last != "mesh-fill: flag provided but not defined: -no-such-flag" {
		t.Errorf("last line %q, want the error led by mesh-fill:\n%s", last, text)
	}
	if !strings.Contains(text, "-allow-unit") {
		t.Errorf("no flags' list:\n%s", text)
	}
}
