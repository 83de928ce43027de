package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestMain runs mesh-fill's main instead of the tests when MESH_FILL_ARGS
// is set (its arguments, split on spaces): meshFill starts the test binary
// so, as a process of its own; MESH_FILL_NOFILE, when set, is its
// open-file limit.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("MESH_FILL_ARGS"); ok {
		if n, err := strconv.ParseUint(os.Getenv("MESH_FILL_NOFILE"), 10, 64); err == nil {
			// the open-file limit mesh-fill runs with (a unit's LimitNOFILE=)
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				panic(err)
			}
		}
		os.Args = append([]string{"mesh-fill"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// meshFill is the command running mesh-fill with args (none may hold a space).
func meshFill(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MESH_FILL_ARGS="+strings.Join(args, " "))
	return cmd
}

// proc is a mesh-fill process serving on sock.
type proc struct {
	cmd    *exec.Cmd
	sock   string
	stderr string        // the file its stderr goes to
	exited chan struct{} // closed when it has, err then its Wait's
	err    error
}

// start runs `mesh-fill serve --socket <new> args…` and returns once its
// socket is there, or once it exited.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startAs(t, nil, args...)
}

// startAs is start with the process's credential (nil: the test's).
func startAs(t *testing.T, cred *syscall.Credential, args ...string) *proc {
	t.Helper()
	dir, err := os.MkdirTemp("", "mf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &proc{sock: filepath.Join(dir, "fill.sock"), stderr: filepath.Join(dir, "stderr"), exited: make(chan struct{})}
	errFile, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close() // the process has its own
	p.cmd = meshFill(append([]string{"serve", "--socket", p.sock}, withStateDir(args, filepath.Join(dir, "state"))...)...)
	p.cmd.Stderr = errFile
	if cred != nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	bustest.Eventually(t, 10*time.Second, func() error {
		select {
		case <-p.exited:
			return nil
		default:
		}
		if _, err := os.Stat(p.sock); err != nil {
			return fmt.Errorf("no socket yet")
		}
		// The socket is there a moment before the line that says what
		// it serves with (tests read it).
		if !strings.Contains(p.said(), "fill socket listening") {
			return fmt.Errorf("not said listening yet")
		}
		return nil
	})
	return p
}

// exit waits for the process to end and returns its exit status.
func (p *proc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("mesh-fill did not exit within 30s")
	}
	if ee := (*exec.ExitError)(nil); errors.As(p.err, &ee) {
		return ee.ExitCode()
	} else if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// said is its stderr so far.
func (p *proc) said() string { b, _ := os.ReadFile(p.stderr); return string(b) }

// running says the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// TestASighupIsLoggedAndASigtermStops: a SIGHUP (an operator's reload, a
// closed terminal) is logged and mesh-fill serves on; a SIGTERM stops it,
// exit 0, its socket removed. Before, the SIGHUP killed it (exit 129, the
// socket left behind).
func TestASighupIsLoggedAndASigtermStops(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root, "--state-dir", t.TempDir())
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		if !p.running() || !strings.Contains(p.said(), "SIGHUP: nothing to reload; ignored") {
			return fmt.Errorf("running %v; stderr:\n%s", p.running(), p.said())
		}
		return nil
	})
	c := &fill.Client{Socket: p.sock}
	if _, err := c.Fill(t.Context(), fill.Request{Module: "m", Files: []fill.File{{Path: "/a.conf", Form: fill.FormOwned, Content: []byte("a\n")}}}); err != nil {
		t.Fatalf("after the SIGHUP: %v", err)
	}
	c.CloseIdle()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, p.said())
	}
	if _, err := os.Lstat(p.sock); !os.IsNotExist(err) {
		t.Errorf("socket left: %v", err)
	}
}

// TestAStateDirInUseOrCorruptExitsNonZero: a second mesh-fill on a state
// dir in use exits 2 naming the dir and the first's pid, the first
// serving on; stopped, its module's state file cut short, a new one exits
// 2 naming the file and what to do, and the file written stays as it was.
func TestAStateDirInUseOrCorruptExitsNonZero(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	first := start(t, "--root", root, "--state-dir", state)
	c := &fill.Client{Socket: first.sock}
	if _, err := c.Fill(t.Context(), fill.Request{Module: "a", Whole: true, Files: []fill.File{{Path: "/a.conf", Form: fill.FormOwned, Content: []byte("a\n")}}}); err != nil {
		t.Fatal(err)
	}
	c.CloseIdle()

	second := start(t, "--root", root, "--state-dir", state)
	if code := second.exit(t); code != 2 {
		t.Errorf("second: exit %d, want 2", code)
	}
	want := "state dir " + state + " is in use by another mesh-fill (pid " + strconv.Itoa(first.cmd.Process.Pid) + ")"
	if !strings.Contains(second.said(), want) {
		t.Errorf("second's stderr does not say %q:\n%s", want, second.said())
	}
	if !first.running() {
		t.Fatalf("the first exited; stderr:\n%s", first.said())
	}

	first.cmd.Process.Signal(syscall.SIGTERM)
	if code := first.exit(t); code != 0 {
		t.Fatalf("first: exit %d; stderr:\n%s", code, first.said())
	}
	files, _ := filepath.Glob(filepath.Join(state, "module-*.json"))
	if len(files) != 1 {
		t.Fatalf("state files %v", files)
	}
	if err := os.Truncate(files[0], 5); err != nil {
		t.Fatal(err)
	}
	third := start(t, "--root", root, "--state-dir", state)
	if code := third.exit(t); code != 2 {
		t.Errorf("after the state file was cut: exit %d, want 2", code)
	}
	for _, want := range []string{"mesh-fill: ", "state file " + files[0] + " unreadable or corrupt", "move it out of " + state} {
		if !strings.Contains(third.said(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, third.said())
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "a.conf")); err != nil || string(b) != "a\n" {
		t.Errorf("a.conf: %q %v", b, err)
	}
}

// TestAProgramNotRunWhenKilledRunsAtTheNextStart: mesh-fill killed (kill
// -9) after writing a module's file, as its restart starts, runs that
// restart when started again, and once: the module's next request finds
// the file unchanged and restarts nothing. Before, the restart was lost
// for good (every later request read the file unchanged). The on-change
// command kills mesh-fill the first time, then logs each run.
func TestAProgramNotRunWhenKilledRunsAtTheNextStart(t *testing.T) {
	root, state, dir := t.TempDir(), t.TempDir(), t.TempDir()
	runs, killOnce := filepath.Join(dir, "runs"), filepath.Join(dir, "kill-once")
	prog := filepath.Join(dir, "on-change")
	script := fmt.Sprintf("#!/bin/sh\nif [ -e %[1]s ]; then rm %[1]s; kill -9 $PPID; exit 1; fi\necho \"$1 $2\" >> %[2]s\n", killOnce, runs)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(killOnce, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--root", root, "--state-dir", state, "--on-change-command", prog}
	req := fill.Request{Module: "a", Whole: true, Files: []fill.File{{Path: "/app.conf", Form: fill.FormOwned, Content: []byte("v2\n"),
		OnChange: fill.OnChange{Action: fill.OnChangeRestart, Unit: "app.service"}}}}

	first := start(t, args...)
	if _, err := (&fill.Client{Socket: first.sock}).Fill(t.Context(), req); err == nil {
		t.Fatal("the request was answered; mesh-fill should have been killed first")
	}
	if code := first.exit(t); code != -1 {
		t.Fatalf("exit %d, want killed; stderr:\n%s", code, first.said())
	}
	if b, err := os.ReadFile(filepath.Join(root, "app.conf")); err != nil || string(b) != "v2\n" {
		t.Fatalf("app.conf: %q %v", b, err)
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Fatalf("a restart ran before the kill: %v", err)
	}

	second := start(t, args...)
	bustest.Eventually(t, 10*time.Second, func() error {
		if b, _ := os.ReadFile(runs); string(b) != "restart app.service\n" {
			return fmt.Errorf("runs %q; stderr:\n%s", b, second.said())
		}
		return nil
	})
	if !strings.Contains(second.said(), "programs not run when mesh-fill stopped after writing their files: running them now") {
		t.Errorf("not said:\n%s", second.said())
	}
	c := &fill.Client{Socket: second.sock}
	resp, err := c.Fill(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	c.CloseIdle()
	if resp.Files[0].Action != fill.ActionUnchanged || resp.Program == nil || resp.Program.Action != fill.ProgramNone {
		t.Errorf("the next request: %+v %+v", resp.Files, resp.Program)
	}
	if b, _ := os.ReadFile(runs); string(b) != "restart app.service\n" {
		t.Errorf("runs %q, want the one restart", b)
	}
}

// TestAFileMadeWithoutAGroupIsNotMeshFillsGroups: mesh-fill's unit runs it
// with Group=mesh-fill, the group it shares its socket with the client
// through; a file made for a request naming no group took that group, so
// a 0640 file meant for its owner's group was readable by every member
// of mesh-fill's. It now gets its owner's primary group, or root's; a
// directory made for it is root's, 0755.
func TestAFileMadeWithoutAGroupIsNotMeshFillsGroups(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving files away needs root; the test runs as uid", os.Getuid())
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// As the unit runs it: root, its group another (nogroup stands for mesh-fill).
	old := syscall.Umask(0o007) // the unit's UMask, inherited by the process
	p := startAs(t, &syscall.Credential{Uid: 0, Gid: 65534, NoSetGroups: true}, "--root", root)
	syscall.Umask(old)
	c := &fill.Client{Socket: p.sock}
	defer c.CloseIdle()
	req := fill.Request{Module: "a", Files: []fill.File{
		{Path: "/etc/a/root.conf", Form: fill.FormOwned, Content: []byte("r\n"), Owner: "root", Mode: "0640"},
		{Path: "/etc/a/daemon.conf", Form: fill.FormOwned, Content: []byte("d\n"), Owner: "daemon", Mode: "0640"},
		{Path: "/etc/a/none.conf", Form: fill.FormOwned, Content: []byte("n\n"), Mode: "0640"},
		{Path: "/etc/a/named.conf", Form: fill.FormOwned, Content: []byte("g\n"), Owner: "root", Group: "nogroup", Mode: "0640"},
	}}
	if _, err := c.Fill(t.Context(), req); err != nil {
		t.Fatalf("fill: %v; stderr:\n%s", err, p.said())
	}
	// The directory it made for them: root's, 0755 (the unit's UMask=0007
	// and Group=mesh-fill made it 0750 of mesh-fill's group: its members
	// could list it, the service user daemon could not reach its file).
	di, err := os.Stat(filepath.Join(root, "etc/a"))
	if err != nil {
		t.Fatal(err)
	}
	if gid, mode := di.Sys().(*syscall.Stat_t).Gid, di.Mode().Perm(); gid != 0 || mode != 0o755 {
		t.Errorf("/etc/a made with group %d, mode %04o; want 0, 0755", gid, mode)
	}
	for name, want := range map[string]uint32{"root.conf": 0, "daemon.conf": 1, "none.conf": 0, "named.conf": 65534} {
		fi, err := os.Stat(filepath.Join(root, "etc/a", name))
		if err != nil {
			t.Fatal(err)
		}
		if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != want {
			t.Errorf("%s: group %d, want %d", name, gid, want)
		}
	}
}
