package fill

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/outputs/fill/filltest"
	"github.com/rs/zerolog"
)

// writeOne is how a file was written before writeAll's phases, the
// baseline of BenchmarkWriteRequests: as renameio's PendingFile did (temp
// file, mode and owner, fsync, close and rename; no fsync of the
// directory), file by file, in the request's directory handles.
func writeOne(ds *dirs, st step) error {
	p := st.file.Path
	dir, err := ds.get(st.t.dir)
	if err != nil {
		return fmt.Errorf("path %q: %w", p, err)
	}
	name, f, err := openTemp(dir, st.t.base, st.mode)
	if err != nil {
		return fmt.Errorf("path %q: making the temp file: %w", p, err)
	}
	tmp := &temp{dir: dir, name: name, f: f}
	renamed := false
	defer func() {
		if !renamed {
			tmp.remove()
		}
	}()
	if _, err := f.Write(st.want); err != nil {
		return fmt.Errorf("path %q: writing the temp file: %w", p, err)
	}
	if st.uid >= 0 || st.gid >= 0 {
		if err := f.Chown(st.uid, st.gid); err != nil {
			return fmt.Errorf("path %q: setting owner %d and group %d: %w", p, st.uid, st.gid, err)
		}
	}
	if err := f.Chmod(st.mode); err != nil { // renameio's static permissions
		return fmt.Errorf("path %q: setting mode %04o: %w", p, st.mode, err)
	}
	if err := syncTemp(tmp, p); err != nil {
		return err
	}
	if err := dir.rename(name, st.t.base); err != nil {
		return fmt.Errorf("path %q: replacing the file: %w", p, err)
	}
	renamed = true
	return nil
}

// writePerFile is the old writeAll: writers goroutines, each file written
// and fsynced and renamed on its own.
func writePerFile(ds *dirs, steps []step) error {
	ds.fsyncMade = true
	errs := make([]error, len(steps))
	each(len(steps), func(i int) {
		if steps[i].write {
			errs[i] = writeOne(ds, steps[i])
		}
	})
	return firstErr(errs)
}

// BenchmarkWriteRequests is a cold start's writes: 100 requests of 100
// files of 300 bytes, each request its own directory, 8 requests at once,
// into a directory under os.TempDir() (a real disk, not tmpfs, for fsync
// to mean anything). Each iteration fills twice each way, each time into a
// fresh directory: writeAll as mesh-fill runs it (one syncfs per
// filesystem for requests this large), writeAll fsyncing every file
// (SyncFSFrom < 0), and the old per-file writes; it reports seconds per
// fill of each and the ratios to the first.
func BenchmarkWriteRequests(b *testing.B) {
	const requests, files, inFlight = 100, 100, 8
	reqs := make([]Request, requests)
	for r := range reqs {
		reqs[r].Module = fmt.Sprintf("m%03d", r)
		for f := range files {
			reqs[r].Files = append(reqs[r].Files, File{
				Path:    fmt.Sprintf("/m%03d/f%03d.conf", r, f),
				Form:    FormOwned,
				Content: bytes.Repeat([]byte(fmt.Sprintf("%03d.%03d ", r, f)), 300/8),
			})
		}
	}
	base := filltest.Dir(b, "", "fill-bench") // each fill's directory in a fresh part of the disk
	b.Cleanup(filltest.RemoveAll)
	run := 0
	// fill writes reqs into a fresh directory and says how long that took.
	fill := func(write func(*dirs, []step) error) time.Duration {
		b.Helper()
		run++
		root := fmt.Sprintf("%s/%d", base, run)
		if err := os.Mkdir(root, 0o755); err != nil {
			b.Fatal(err)
		}
		c := serveOn(b, &Server{Root: root, Log: zerolog.Nop(), write: write})
		work := make(chan Request)
		errs := make(chan error, requests)
		var wg sync.WaitGroup
		syscall.Sync() // what earlier fills left dirty is not this one's to flush
		start := time.Now()
		for range inFlight {
			wg.Go(func() {
				for req := range work {
					if _, err := c.Fill(b.Context(), req); err != nil {
						errs <- err
					}
				}
			})
		}
		for _, req := range reqs {
			work <- req
		}
		close(work)
		wg.Wait()
		took := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return took
	}
	ways := []struct {
		metric string
		write  func(*dirs, []step) error
		took   time.Duration
	}{
		{metric: "s-phased", write: func(ds *dirs, s []step) error { return writeAll(ds, s, DefaultSyncFSFrom) }},
		{metric: "s-phased-fsync", write: func(ds *dirs, s []step) error { return writeAll(ds, s, -1) }},
		{metric: "s-per-file", write: writePerFile},
	}

	// making files soon after many were deleted nearby (an earlier run's
	// cleanup) is slower on a journal-less ext4 (the inode allocator skips
	// recently deleted inodes one by one): a fill of each way, not timed
	for _, w := range ways {
		fill(w.write)
	}

	// each way in turn, then in the reverse order: a disk getting busier
	// or quieter over the run favours none
	for b.Loop() {
		for k := range 2 * len(ways) {
			w := &ways[k%len(ways)]
			if k >= len(ways) {
				w = &ways[2*len(ways)-1-k]
			}
			w.took += fill(w.write)
		}
	}
	runs := float64(2 * b.N)
	for _, w := range ways {
		b.ReportMetric(w.took.Seconds()/runs, w.metric)
	}
	b.ReportMetric(ways[2].took.Seconds()/ways[0].took.Seconds(), "x-faster")
	b.ReportMetric(ways[1].took.Seconds()/ways[0].took.Seconds(), "x-faster-than-fsync")
}
