package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sync"

	"github.com/google/renameio/v2"
)

// write puts one step's bytes on disk atomically: a temp file in the same
// directory (created 0755 with its parents when missing), mode and owner
// set on it, fsync, then rename over the target.
func write(root *os.Root, st step) error {
	p := st.file.Path
	if st.t.dir != "." {
		if err := root.MkdirAll(st.t.dir, 0o755); err != nil {
			return fmt.Errorf("path %q: making its directory: %w", p, err)
		}
	}
	dir, err := root.OpenRoot(st.t.dir)
	if err != nil {
		return fmt.Errorf("path %q: opening its directory: %w", p, err)
	}
	defer dir.Close()
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
	errs := make([]error, len(steps))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(writers, len(steps)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = write(root, steps[i])
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
