//go:build !linux

package fill

import (
	"errors"
	"os"
)

// startWriteback has no sync_file_range to call here: the fsync does it all.
func startWriteback(*os.File) {}

// canSyncFS: no syncfs(2) here; every file is fsynced on its own.
const canSyncFS = false

var syncFS = func(*os.File) error { return errors.ErrUnsupported }
