package fill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNoRemovalTakesAFileOfTheStateDir: a path a module wrote that now
// leads into mesh-fill's state dir (the state dir bind-mounted over the
// module's directory since, or --state-dir moved to where the module
// wrote) is not removed when the module's whole request no longer names it
// or its DELETE comes: it is left, said in the log, and forgotten (the
// module holds it no more), never refused (the client would send the
// removal again for ever). Before, writes were refused there but
// removals were not: a module's DELETE could unlink another module's
// state file, and with it what that module holds.
func TestNoRemovalTakesAFileOfTheStateDir(t *testing.T) {
	t.Run("bind-mounted", func(t *testing.T) {
		root, state := t.TempDir(), t.TempDir()
		log := newLog(t)
		c, _ := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
		// module o's state file is what m's paths will name once the
		// state dir is mounted over their directory
		fillOK(t, c, Request{Module: "o", Whole: true, Files: []File{{Path: "/o.conf", Form: FormOwned, Content: []byte("o\n")}}})
		ofile := filepath.Base((&ledger{dir: state}).stateFile("o"))
		victim := filepath.Join(state, ofile)
		before := readFile(t, victim)
		p := "/etc/bound/" + ofile
		fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
			{Path: p, Form: FormOwned, Content: []byte("m's\n")},
			{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("m\n")},
		}})
		fillOK(t, c, Request{Module: "n", Whole: true, Files: []File{{Path: "/etc/bound/lock", Form: FormOwned, Content: []byte("n's\n")}}})
		mnt := filepath.Join(root, "etc", "bound")
		if err := unix.Mount(state, mnt, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("cannot bind-mount here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

		// m's whole request no longer names p
		resp := fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("m\n")}}})
		if i := slices.IndexFunc(resp.Files, func(f FileResult) bool { return f.Path == p }); i >= 0 {
			t.Errorf("the answer says %s %s", p, resp.Files[i].Action)
		}
		mustRead(t, victim, before)
		// n leaves the node
		if files, err := c.Delete(t.Context(), "n"); err != nil || len(files) != 0 {
			t.Errorf("DELETE n: %+v %v, want no file removed", files, err)
		}
		if _, err := os.Lstat(filepath.Join(state, "lock")); err != nil {
			t.Errorf("the state dir's lock: %v", err)
		}
		wantLogged(t, log, p, "/etc/bound/lock")

		// forgotten: unmounted, what m and n wrote there is nobody's now,
		// and their next requests remove none of it
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fill(t.Context(), Request{Module: "m", Whole: true}); err != nil {
			t.Fatal(err)
		}
		mustRead(t, filepath.Join(mnt, ofile), "m's\n")
		mustRead(t, filepath.Join(mnt, "lock"), "n's\n")
		mustAbsent(t, filepath.Join(root, "etc/m.conf"))
		fillOK(t, c, Request{Module: "x", Whole: true, Files: []File{{Path: p, Form: FormOwned, Content: []byte("x\n")}}}) // nobody's: no 409
	})

	t.Run("moved to where a module wrote", func(t *testing.T) {
		root, first := t.TempDir(), t.TempDir()
		c, stop := runUntilStopped(t, &Server{Root: root, StateDir: first}, newLog(t))
		fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
			{Path: "/var/st/data", Form: FormOwned, Content: []byte("m's\n")},
			{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("m\n")},
		}})
		fillOK(t, c, Request{Module: "n", Whole: true, Files: []File{{Path: "/var/st/other", Form: FormOwned, Content: []byte("n's\n")}}})
		stop()
		// the operator moves the state dir to /var/st below the root
		state := filepath.Join(root, "var/st")
		if err := os.Chmod(state, 0o700); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(first, "module-*.json"))
		for _, f := range files {
			if err := os.Rename(f, filepath.Join(state, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
		log := newLog(t)
		c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
		resp := fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/m.conf", Form: FormOwned, Content: []byte("m\n")}}})
		if len(resp.Files) != 1 {
			t.Errorf("answer: %+v", resp.Files)
		}
		if files, err := c.Delete(t.Context(), "n"); err != nil || len(files) != 0 {
			t.Errorf("DELETE n: %+v %v, want no file removed", files, err)
		}
		mustRead(t, filepath.Join(state, "data"), "m's\n")
		mustRead(t, filepath.Join(state, "other"), "n's\n")
		wantLogged(t, log, "/var/st/data", "/var/st/other")
	})
}

// wantLogged wants a warning that each path is left in the state dir.
func wantLogged(t *testing.T, log logFile, paths ...string) {
	t.Helper()
	lines := strings.Split(log.String(), "\n")
	for _, p := range paths {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, `"level":"warn"`) && strings.Contains(l, `"path":"`+p+`"`) && strings.Contains(l, "state dir")
		}) {
			t.Errorf("no warning says %s is left in the state dir; log:\n%s", p, log)
		}
	}
}
