package fill

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// One who may write a directory below an allowed path may put a named pipe
// (a fifo) where mesh-fill opens a directory or a file. Opening a fifo to
// read waits for a writer, forever: the request would hang, holding its
// module's and its paths' locks, and every later request of them with it.
// These tests put one there at the moment mesh-fill opens the name, and
// want the request answered (refused, naming its path) and the next one
// of the module filled.

// hangFor is how long a request may take before a test calls it hung.
const hangFor = 5 * time.Second

// fillWithin sends req and gives its error; a request not answered within
// hangFor fails the test, and then the fifo at fifo() is opened to write,
// which lets a server waiting to open it to read go on (so the test ends).
func fillWithin(t *testing.T, c *Client, req Request, fifo func() string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangFor)
	defer cancel()
	_, err := c.Fill(ctx, req)
	if ctx.Err() != nil {
		t.Errorf("the request hung (no answer in %s) on the fifo at %s", hangFor, fifo())
		if f, oerr := os.OpenFile(fifo(), os.O_WRONLY|syscall.O_NONBLOCK, 0); oerr == nil {
			f.Close()
		}
	}
	return err
}

// fifoAt is a fifo() for fillWithin that is known before the request.
func fifoAt(p string) func() string { return func() string { return p } }

// mkfifo puts a fifo at p, in place of what is there.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Error(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Error(err)
	}
}

// TestADirectorySwappedForAFifoDoesNotHang: a parent directory swapped for
// a fifo between mesh-fill's look at it and its opening: the request is
// refused (400 naming the path and the directory), nothing of it is
// written, and the module's next request is filled.
func TestADirectorySwappedForAFifoDoesNotHang(t *testing.T) {
	root := t.TempDir()
	app := filepath.Join(root, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	var swapped atomic.Bool
	beforeOpen = func(rel string) {
		if rel == "app" && swapped.CompareAndSwap(false, true) {
			if err := os.Rename(app, filepath.Join(root, "moved")); err != nil {
				t.Error(err)
			}
			mkfifo(t, app)
		}
	}
	t.Cleanup(func() { beforeOpen = nil })
	c := startServer(t, &Server{Root: root})

	other := File{Path: "/other", Form: FormOwned, Content: []byte("other\n")}
	err := fillWithin(t, c, Request{Module: "m", Files: []File{
		other, {Path: "/app/conf", Form: FormOwned, Content: []byte("the module's\n")},
	}}, fifoAt(app))
	if !swapped.Load() {
		t.Fatal("the directory was never swapped")
	}
	wantStatus(t, err, http.StatusBadRequest, `"/app/conf"`, "parent directory /app changed while being opened")
	mustAbsent(t, filepath.Join(root, "other"))
	mustAbsent(t, filepath.Join(root, "moved", "conf"))

	fillOK(t, c, Request{Module: "m", Files: []File{other}})
	mustRead(t, filepath.Join(root, "other"), "other\n")
}

// TestAFileSwappedForAFifoIsNotRead: a file mesh-fill reads before writing
// (a managed-keys or managed-block file, merged with what is there; an
// owned file, compared with it) swapped for a fifo between its look and
// its reading: the request is refused (400 naming the path), nothing of
// it is written, and the module's next request is filled. (The fifo may
// get the file's inode number, freed as it is removed: only its type
// tells it from the file looked at.)
func TestAFileSwappedForAFifoIsNotRead(t *testing.T) {
	for _, form := range []string{FormOwned, FormManagedKeys, FormManagedBlock} {
		t.Run(form, func(t *testing.T) {
			root := t.TempDir()
			conf := filepath.Join(root, "etc/conf")
			writeFile(t, conf, "A=1\n")
			var swapped atomic.Bool
			beforeOpen = func(rel string) {
				if rel == "etc/conf" && swapped.CompareAndSwap(false, true) {
					mkfifo(t, conf)
				}
			}
			t.Cleanup(func() { beforeOpen = nil })
			c := startServer(t, &Server{Root: root})

			other := File{Path: "/etc/other", Form: FormOwned, Content: []byte("other\n")}
			err := fillWithin(t, c, Request{Module: "m", Files: []File{
				other, {Path: "/etc/conf", Form: form, Content: []byte("B=2\n")},
			}}, fifoAt(conf))
			if !swapped.Load() {
				t.Fatal("the file was never swapped")
			}
			wantStatus(t, err, http.StatusBadRequest, `"/etc/conf" changed while being read`)
			mustAbsent(t, filepath.Join(root, "etc/other"))

			fillOK(t, c, Request{Module: "m", Files: []File{other}})
			mustRead(t, filepath.Join(root, "etc/other"), "other\n")
		})
	}
}

// TestATempFileSwappedForAFifoIsNotSynced: where syncfs is refused, a
// request's temp files, closed once written, are each fsynced after all;
// one swapped by name for a fifo before that is not opened and waited on:
// the request fails (500 naming its path), no file is replaced, and the
// module's next request is filled.
func TestATempFileSwappedForAFifoIsNotSynced(t *testing.T) {
	if !canSyncFS {
		t.Skip("no syncfs here")
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "app/conf"), "old\n")
	var fifo atomic.Value // the temp file's path, once swapped
	fifo.Store("")
	old := syncFS
	syncFS = func(*os.File) error {
		if fifo.Load() == "" {
			temps, _ := filepath.Glob(filepath.Join(root, "app/.conf*"))
			if len(temps) != 1 {
				t.Errorf("temp files %v, want one", temps)
			} else {
				mkfifo(t, temps[0])
				fifo.Store(temps[0])
			}
		}
		return &os.SyscallError{Syscall: "syncfs", Err: syscall.ENOSYS}
	}
	t.Cleanup(func() { syncFS = old; syncFSRefused.Store(false) })
	c := startServer(t, &Server{Root: root, SyncFSFrom: 1})

	err := fillWithin(t, c, Request{Module: "m", Files: []File{
		{Path: "/app/conf", Form: FormOwned, Content: []byte("new\n")},
	}}, func() string { return fifo.Load().(string) })
	if fifo.Load() == "" {
		t.Fatal("no temp file was swapped")
	}
	wantStatus(t, err, http.StatusInternalServerError, `"/app/conf": syncing the temp file`)
	mustRead(t, filepath.Join(root, "app/conf"), "old\n")
	if entries, _ := os.ReadDir(filepath.Join(root, "app")); len(entries) != 1 {
		t.Errorf("app holds %v, want conf alone", entries)
	}

	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/app/conf", Form: FormOwned, Content: []byte("new\n")}}})
	mustRead(t, filepath.Join(root, "app/conf"), "new\n")
}
