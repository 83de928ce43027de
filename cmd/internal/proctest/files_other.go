//go:build !linux

package proctest

import (
	"errors"
	"testing"
	"time"
)

// Files needs inotify: without it, a benchmark that watches files skips.
type Files struct{}

// WatchFiles skips the benchmark: there is no inotify here.
func WatchFiles(b testing.TB) *Files {
	b.Skip("watching files needs Linux's inotify")
	return nil
}

// Add is not reached (WatchFiles skipped).
func (w *Files) Add(dir string) error { return errors.New("no inotify") }

// Wait is not reached (WatchFiles skipped).
func (w *Files) Wait(path string, want []byte, timeout time.Duration) (time.Time, error) {
	return time.Time{}, errors.New("no inotify")
}
