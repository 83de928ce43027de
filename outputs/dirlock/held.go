package dirlock

import (
	"errors"
	"io/fs"
	"os"
)

// Held is a directory taken (Take) that can be taken again when it is
// removed while its process runs (an operator's rm -rf, a clean-up of
// /var/lib): its lock went with it, and a second process started on the
// path would take it unsaid. mesh-fill makes its state dir again as it
// writes there; Again is the same for a process that writes there seldom.
type Held struct {
	dir, what, detail string
	taken             os.FileInfo
	release           func()
}

// Hold takes dir as Take does and remembers which directory it took.
func Hold(dir, what, detail string) (*Held, error) {
	release, err := Take(dir, what, detail)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		release()
		return nil, err
	}
	return &Held{dir: dir, what: what, detail: detail, taken: fi, release: release}, nil
}

// Again takes the directory again when the one at its path is not the one
// taken (removed, or another made there), and says so (remade); an
// *InUseError when another process took the new one meanwhile.
func (h *Held) Again() (remade bool, err error) {
	fi, err := os.Stat(h.dir)
	if err == nil && os.SameFile(fi, h.taken) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	release, err := Take(h.dir, h.what, h.detail)
	if err != nil {
		return false, err
	}
	if fi, err = os.Stat(h.dir); err != nil {
		release()
		return false, err
	}
	h.release()
	h.taken, h.release = fi, release
	return true, nil
}

// Release lets the directory go.
func (h *Held) Release() { h.release() }
