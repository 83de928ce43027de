package fill

import (
	"fmt"
	"os"
)

// syncStateDir makes durable the renames and removals of files in the
// state dir dir: a file renamed in (renameio) or removed lasts a crash
// only once its directory is synced. A variable so a test can see when.
var syncStateDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing state dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing state dir %s: %w", dir, err)
	}
	return nil
}
