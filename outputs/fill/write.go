package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sync"

	"github.com/google/renameio/v2"
)

// dirs opens each directory a request writes into once (made 0755 with its
// parents when missing), however many of its files are written.
type dirs struct {
	root *os.Root
	mu   sync.Mutex
	open map[string]*os.Root
	errs map[string]error
}

func (d *dirs) get(dir string) (*os.Root, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.open[dir]; ok {
		return r, nil
	}
	if err, ok := d.errs[dir]; ok {
		return nil, err
	}
	r, err := d.openDir(dir)
	if err != nil {
		d.errs[dir] = err
		return nil, err
	}
	d.open[dir] = r
	return r, nil
}

func (d *dirs) openDir(dir string) (*os.Root, error) {
	if dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("making its directory: %w", err)
		}
	}
	r, err := d.root.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening its directory: %w", err)
	}
	return r, nil
}

func (d *dirs) close() {
	for _, r := range d.open {
		r.Close()
	}
}

// write puts one step's bytes on disk atomically: a temp file in the same
// directory, mode and owner set on it, fsync, then rename over the target.
func write(ds *dirs, st step) error {
	p := st.file.Path
	dir, err := ds.get(st.t.dir)
	if err != nil {
		return fmt.Errorf("path %q: %w", p, err)
	}
	pf, err := renameio.NewPendingFile(st.t.base, renameio.WithRoot(dir), renameio.WithStaticPermissions(st.mode))
	if err != nil {
		return fmt.Errorf("path %q: making the temp file: %w", p, err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(st.want); err != nil {
		return fmt.Errorf("path %q: writing the temp file: %w", p, err)
	}
	if st.uid >= 0 || st.gid >= 0 {
		if err := pf.Chown(st.uid, st.gid); err != nil {
			return fmt.Errorf("path %q: setting owner %d and group %d: %w", p, st.uid, st.gid, err)
		}
		// chown may clear mode bits on some systems; set them again
		if err := pf.Chmod(st.mode); err != nil {
			return fmt.Errorf("path %q: setting mode %04o: %w", p, st.mode, err)
		}
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("path %q: replacing the file: %w", p, err)
	}
	return nil
}

// writers is how many files of one request are written at once: each
// write waits on its own fsync, and a disk serves several at a time.
const writers = 8

// writeAll writes every step that changes its file, several at once; the
// first error (in the request's order) is returned once all have ended.
func writeAll(root *os.Root, steps []step) error {
	ds := &dirs{root: root, open: map[string]*os.Root{}, errs: map[string]error{}}
	defer ds.close()
	errs := make([]error, len(steps))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(writers, len(steps)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = write(ds, steps[i])
			}
		}()
	}
	for i, st := range steps {
		if st.write {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
