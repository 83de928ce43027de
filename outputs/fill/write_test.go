package fill

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// noTempFiles fails when a temp file (a dot file) is left under root.
func noTempFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// syncWays are the two ways a request's files are made durable, for a test
// to run each: an fsync per file and per directory, and a syncfs per
// filesystem (Server.SyncFSFrom), where there is one.
func syncWays(t *testing.T, test func(t *testing.T, syncFSFrom int)) {
	t.Run("fsync each", func(t *testing.T) { test(t, -1) })
	t.Run("syncfs", func(t *testing.T) {
		if !canSyncFS {
			t.Skip("no syncfs here")
		}
		test(t, 1)
	})
}

func mustMode(t *testing.T, p string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
	}
}

// TestAFailedFileLeavesTheRequestUnwritten: a file that passes every check
// yet cannot be written fails the request (500) and replaces none of its
// files, those before it included, and leaves no temp file anywhere.
func TestAFailedFileLeavesTheRequestUnwritten(t *testing.T) {
	// the temp file of /a/bad is given a name over the limit (255 bytes)
	old := tempName
	tempName = func(base string) string {
		if base == "bad" {
			return strings.Repeat("n", 300)
		}
		return old(base)
	}
	t.Cleanup(func() { tempName = old })
	cases := []struct {
		name   string
		before int  // files in /e written before the failing one
		chown  bool // fail on a chown to root rather than on the name
		reason string
	}{
		{"its temp file cannot be made", 0, false, "making the temp file"},
		{"after a whole batch of files", batch + 10, false, "making the temp file"},
		{"its chown is refused", 0, true, "setting owner 0"},
	}
	for _, tc := range cases {
		syncWays(t, func(t *testing.T, syncFSFrom int) {
			t.Run(tc.name, func(t *testing.T) {
				bad := File{Path: "/a/bad", Form: FormOwned, Content: []byte("bad\n")}
				if tc.chown {
					if canChown() {
						t.Skip("root may give a file to root")
					}
					old := canChown
					canChown = func() bool { return true }
					t.Cleanup(func() { canChown = old })
					bad.Path, bad.Owner = "/a/given-away", "0"
				}
				root := t.TempDir()
				c := startServer(t, &Server{Root: root, SyncFSFrom: syncFSFrom})
				writeFile(t, filepath.Join(root, "a/one"), "old one\n")
				writeFile(t, filepath.Join(root, "b/two"), "old two\n")
				if err := os.Chmod(filepath.Join(root, "b/two"), 0o600); err != nil {
					t.Fatal(err)
				}

				var files []File
				for i := range tc.before {
					files = append(files, File{Path: fmt.Sprintf("/e/f%03d", i), Form: FormOwned, Content: []byte("e\n")})
				}
				files = append(files,
					File{Path: "/a/one", Form: FormOwned, Content: []byte("new one\n")},
					File{Path: "/b/two", Form: FormOwned, Content: []byte("new two\n"), Mode: "0640"},
					File{Path: "/c/new", Form: FormOwned, Content: []byte("new\n")},
					bad,
					File{Path: "/d/after", Form: FormOwned, Content: []byte("after\n")},
				)
				req := Request{Module: "m", Files: files}
				_, err := c.Fill(t.Context(), req)
				if err == nil {
					t.Fatal("the request was filled")
				}
				if msg := err.Error(); !strings.Contains(msg, "500") || !strings.Contains(msg, fmt.Sprintf("path %q: %s", bad.Path, tc.reason)) {
					t.Errorf("error %q should say 500 and path %q: %s", msg, bad.Path, tc.reason)
				}

				if got := readFile(t, filepath.Join(root, "a/one")); got != "old one\n" {
					t.Errorf("a/one replaced: %q", got)
				}
				if got := readFile(t, filepath.Join(root, "b/two")); got != "old two\n" {
					t.Errorf("b/two replaced: %q", got)
				}
				mustMode(t, filepath.Join(root, "b/two"), 0o600)
				mustAbsent(t, filepath.Join(root, "c/new"))
				mustAbsent(t, filepath.Join(root, "d/after"))
				mustAbsent(t, filepath.Join(root, bad.Path))
				if entries, _ := os.ReadDir(filepath.Join(root, "e")); len(entries) != 0 {
					t.Errorf("%d files in e", len(entries))
				}
				noTempFiles(t, root)

				// without the failing file the same request is filled whole
				req.Files = append(files[:len(files)-2:len(files)-2], files[len(files)-1])
				fillOK(t, c, req)
				if got := readFile(t, filepath.Join(root, "a/one")); got != "new one\n" {
					t.Errorf("a/one: %q", got)
				}
				mustMode(t, filepath.Join(root, "b/two"), 0o640)
				noTempFiles(t, root)
			})
		})
	}
}

// TestManyFilesInSeveralDirectories: more files than a batch, spread over
// directories old, new and nested new, some there before with other bytes
// and mode, all end with their bytes and mode and nothing else is left.
func TestManyFilesInSeveralDirectories(t *testing.T) {
	syncWays(t, manyFilesInSeveralDirectories)
}

func manyFilesInSeveralDirectories(t *testing.T, syncFSFrom int) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, SyncFSFrom: syncFSFrom})
	dirs := []string{"/etc/app", "/srv", "/var/lib/x/y/z", "/"}
	modes := []fs.FileMode{0o600, 0o640, 0o644, 0o755}
	n := batch + 44
	var req = Request{Module: "m"}
	for i := range n {
		p := filepath.Join(dirs[i%len(dirs)], fmt.Sprintf("f%03d.conf", i))
		if i%5 == 0 {
			writeFile(t, filepath.Join(root, p), "old\n")
		}
		req.Files = append(req.Files, File{Path: p, Form: FormOwned,
			Content: []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), i%40)), Mode: fmt.Sprintf("%04o", modes[i%len(modes)])})
	}

	resp := fillOK(t, c, req)
	for i, f := range req.Files {
		if got := resp.Files[i]; got.Action != ActionWritten || got.Digest != sha(f.Content) {
			t.Errorf("%s: %+v", f.Path, got)
		}
		p := filepath.Join(root, f.Path)
		if got := readFile(t, p); got != string(f.Content) {
			t.Errorf("%s: %q, want %q", f.Path, got, f.Content)
		}
		mustMode(t, p, modes[i%len(modes)])
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		want := n / len(dirs)
		if d == "/" {
			want += 3 // etc, srv and var
		}
		if len(entries) != want {
			t.Errorf("%s: %d entries, want %d", d, len(entries), want)
		}
	}
	noTempFiles(t, root)

	for i, got := range fillOK(t, c, req).Files {
		if got.Action != ActionUnchanged {
			t.Errorf("%s filled again: %s", req.Files[i].Path, got.Action)
		}
	}
}

// TestAFailedSyncfsIsTheRequestsFailure: when the flush of the filesystem
// fails before the renames, the request fails (500) naming its first file
// and the reason, and no file is replaced; when the flush after the
// renames fails, the request fails too (the files are in place, but may
// not last a crash), and a request of fewer files than SyncFSFrom
// fsyncs each file and is not touched by it.
func TestAFailedSyncfsIsTheRequestsFailure(t *testing.T) {
	if !canSyncFS {
		t.Skip("no syncfs here")
	}
	var calls, failOn atomic.Int32 // syncfs calls so far; the one to fail
	failOn.Store(1)
	old := syncFS
	syncFS = func(f *os.File) error {
		if calls.Add(1) == failOn.Load() {
			return &os.SyscallError{Syscall: "syncfs", Err: syscall.EIO}
		}
		return old(f)
	}
	t.Cleanup(func() { syncFS = old })
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, SyncFSFrom: 3})
	writeFile(t, filepath.Join(root, "a/one"), "old one\n")

	req := Request{Module: "m", Files: []File{
		{Path: "/a/one", Form: FormOwned, Content: []byte("new one\n")},
		{Path: "/a/two", Form: FormOwned, Content: []byte("two\n")},
		{Path: "/b/three", Form: FormOwned, Content: []byte("three\n")},
	}}
	_, err := c.Fill(t.Context(), req)
	want := `path "/a/one": syncing the temp file's filesystem: syncfs: input/output error`
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want a 500 saying %s", err, want)
	}
	if got := readFile(t, filepath.Join(root, "a/one")); got != "old one\n" {
		t.Errorf("a/one replaced: %q", got)
	}
	mustAbsent(t, filepath.Join(root, "a/two"))
	mustAbsent(t, filepath.Join(root, "b/three"))
	noTempFiles(t, root)

	calls.Store(0)
	failOn.Store(2)
	_, err = c.Fill(t.Context(), req)
	want = `path "/a/one": syncing the filesystem of its directory: syncfs: input/output error`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one saying %s", err, want)
	}
	if got := readFile(t, filepath.Join(root, "b/three")); got != "three\n" {
		t.Errorf("b/three: %q", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d syncfs calls for a request on one filesystem, want 2", n)
	}

	calls.Store(0)
	failOn.Store(1)
	req.Files = req.Files[:2]
	req.Files[1].Content = []byte("two again\n")
	fillOK(t, c, req)
	if n := calls.Load(); n != 0 {
		t.Errorf("a request of 2 files (SyncFSFrom 3) called syncfs %d times", n)
	}
	if got := readFile(t, filepath.Join(root, "a/two")); got != "two again\n" {
		t.Errorf("a/two: %q", got)
	}
	noTempFiles(t, root)
}

// TestByDefaultARequestOf32FilesIsFlushedWithSyncfs: a Server left at its
// defaults flushes a request of DefaultSyncFSFrom files with syncfs (twice:
// before and after the renames) and fsyncs a request of one file fewer;
// SyncFSFrom < 0 never calls it.
func TestByDefaultARequestOf32FilesIsFlushedWithSyncfs(t *testing.T) {
	if !canSyncFS {
		t.Skip("no syncfs here")
	}
	var calls atomic.Int32
	old := syncFS
	syncFS = func(f *os.File) error { calls.Add(1); return old(f) }
	t.Cleanup(func() { syncFS = old })
	request := func(n int, tag string) Request {
		req := Request{Module: "m"}
		for i := range n {
			req.Files = append(req.Files, File{Path: fmt.Sprintf("/d/f%02d", i), Form: FormOwned, Content: []byte(tag)})
		}
		return req
	}
	for _, tc := range []struct {
		syncFSFrom, files int
		want              int32
	}{
		{0, DefaultSyncFSFrom, 2},
		{0, DefaultSyncFSFrom - 1, 0},
		{-1, 100, 0},
	} {
		root := t.TempDir()
		c := startServer(t, &Server{Root: root, SyncFSFrom: tc.syncFSFrom})
		calls.Store(0)
		fillOK(t, c, request(tc.files, "x\n"))
		if got := calls.Load(); got != tc.want {
			t.Errorf("SyncFSFrom %d, %d files: %d syncfs calls, want %d", tc.syncFSFrom, tc.files, got, tc.want)
		}
		if got := readFile(t, filepath.Join(root, fmt.Sprintf("d/f%02d", tc.files-1))); got != "x\n" {
			t.Errorf("SyncFSFrom %d, %d files: the last file holds %q", tc.syncFSFrom, tc.files, got)
		}
		noTempFiles(t, root)
	}
}

// TestARefusedSyncfsFallsBackToAnFsyncPerFile: where syncfs is refused (a
// seccomp filter: ENOSYS, or EPERM), the request is still filled, each file
// fsynced, and later requests do not try syncfs again.
func TestARefusedSyncfsFallsBackToAnFsyncPerFile(t *testing.T) {
	if !canSyncFS {
		t.Skip("no syncfs here")
	}
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		t.Run(errno.Error(), func(t *testing.T) {
			var calls atomic.Int32
			old := syncFS
			syncFS = func(*os.File) error {
				calls.Add(1)
				return &os.SyscallError{Syscall: "syncfs", Err: errno}
			}
			t.Cleanup(func() { syncFS = old; syncFSRefused.Store(false) })
			root := t.TempDir()
			c := startServer(t, &Server{Root: root, SyncFSFrom: 2})
			for n, content := range []string{"one\n", "two\n"} {
				req := Request{Module: "m", Files: []File{
					{Path: "/a/x", Form: FormOwned, Content: []byte(content)},
					{Path: "/b/y", Form: FormOwned, Content: []byte(content)},
				}}
				fillOK(t, c, req)
				for _, p := range []string{"a/x", "b/y"} {
					if got := readFile(t, filepath.Join(root, p)); got != content {
						t.Errorf("request %d: %s holds %q, want %q", n, p, got, content)
					}
				}
				noTempFiles(t, root)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("syncfs called %d times, want once (refused, then not tried again)", n)
			}
		})
	}
}
