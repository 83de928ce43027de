package fill

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// startRefused serves s and wants Serve to return an error before its
// socket is made: that error.
func startRefused(t *testing.T, s *Server) error {
	t.Helper()
	s.Log = zerolog.New(zerolog.NewTestWriter(t))
	sock := filepath.Join(socketDir(t), "fill.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("Serve returned no error")
			}
			mustAbsent(t, sock)
			return err
		default:
		}
		if _, err := os.Stat(sock); err == nil {
			cancel()
			<-done
			t.Fatal("mesh-fill started; it should have refused to")
		}
	}
	t.Fatal("Serve neither started nor returned within 10s")
	return nil
}

// stateFiles are the module state files of state.
func stateFiles(t *testing.T, state string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, "module-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// wantSaid fails unless err says each of says.
func wantSaid(t *testing.T, err error, says ...string) {
	t.Helper()
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not say %q:\n%v", s, err)
		}
	}
}

// TestACorruptStateFileStopsTheStart: a state file cut short (as a full
// disk or an editor might leave it) stops mesh-fill from starting, naming
// the file and what to do, and nothing is moved or written; once the
// operator moves it out of the state dir, mesh-fill starts. (Before, it was
// set aside and mesh-fill ran without it: another module could take the
// module's files, and a DELETE of it left them behind.)
func TestACorruptStateFileStopsTheStart(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
	stop()
	files := stateFiles(t, state)
	if len(files) != 1 {
		t.Fatalf("state files %v", files)
	}
	if err := os.Truncate(files[0], 10); err != nil {
		t.Fatal(err)
	}

	err := startRefused(t, &Server{Root: root, StateDir: state})
	wantSaid(t, err, "state file "+files[0]+" unreadable or corrupt", "restore it", "move it out of "+state)
	if got := stateFiles(t, state); len(got) != 1 || got[0] != files[0] {
		t.Errorf("state files now %v, want %v untouched", got, files)
	}
	mustAbsent(t, files[0]+".corrupt")
	mustRead(t, filepath.Join(root, "etc/a.conf"), "a\n")

	// the operator knows a's files and moves its state away
	if err := os.Rename(files[0], filepath.Join(t.TempDir(), "a.json")); err != nil {
		t.Fatal(err)
	}
	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
}

// TestAPathClaimedByTwoStateFilesStopsTheStart: two modules' state files
// both holding one owned path (here b's, written by a mesh-fill on another
// state dir, copied in) stop the start, naming the path, both modules and
// both files.
func TestAPathClaimedByTwoStateFilesStopsTheStart(t *testing.T) {
	root, state, other := t.TempDir(), t.TempDir(), t.TempDir()
	log := newLog(t)
	for _, run := range []struct{ module, state string }{{"a", state}, {"b", other}} {
		c, stop := runUntilStopped(t, &Server{Root: root, StateDir: run.state}, log)
		fillOK(t, c, Request{Module: run.module, Whole: true, Files: []File{{Path: "/etc/x.conf", Form: FormOwned, Content: []byte(run.module + "\n")}}})
		stop()
	}
	bFile := stateFiles(t, other)[0]
	aFile := stateFiles(t, state)[0]
	raw, err := os.ReadFile(bFile)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(state, filepath.Base(bFile))
	if err := os.WriteFile(copied, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	err = startRefused(t, &Server{Root: root, StateDir: state})
	wantSaid(t, err, `path "/etc/x.conf" is held by module "a" (owned) and by module "b" (owned)`, aFile, copied)
	mustRead(t, filepath.Join(root, "etc/x.conf"), "b\n")
}

// TestOneStateDirServesOneMeshFill: a second mesh-fill on a state dir in
// use refuses to start, naming the dir and the first one's pid; the
// first serves on; once it stops, a new one starts (the lock file left
// behind blocks nothing). Before, both ran: each took one path for its
// module, and a DELETE through one removed the other's file.
func TestOneStateDirServesOneMeshFill(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/x.conf", Form: FormOwned, Content: []byte("a\n")}}})

	err := startRefused(t, &Server{Root: root, StateDir: state})
	wantSaid(t, err, "state dir "+state+" is in use by another mesh-fill (pid "+strconv.Itoa(os.Getpid())+")")
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/x.conf", Form: FormOwned, Content: []byte("a2\n")}}})
	mustRead(t, filepath.Join(root, "etc/x.conf"), "a2\n")

	stop()
	if _, err := os.Stat(filepath.Join(state, dirlock.Name)); err != nil {
		t.Errorf("the lock file: %v", err)
	}
	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	_, err = c.Fill(t.Context(), Request{Module: "b", Files: []File{{Path: "/etc/x.conf", Form: FormOwned, Content: []byte("b\n")}}})
	wantStatus(t, err, http.StatusConflict, `module "a"`)
}

// TestASocketWhoseDirectoryIsMissingTouchesNoStateDir: `mesh-fill serve`
// with a --socket whose directory is not there (the default
// /run/nox-mesh-host on a machine without mesh-host) is refused naming
// that directory, before the state dir is made or locked.
func TestASocketWhoseDirectoryIsMissingTouchesNoStateDir(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	sock := filepath.Join(base, "no-such-dir", "fill.sock")
	err := (&Server{StateDir: state, Log: zerolog.Nop()}).Serve(t.Context(), sock)
	wantSaid(t, err, "its directory "+filepath.Dir(sock)+" is not there")
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("the state dir after a refused start: %v, want it never made", err)
	}
}
