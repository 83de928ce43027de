package fill

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dropACL removes the access ACL a file made in a directory with a
// default ACL (setfacl -d) took from it, so the file carries the mode
// it is given and nothing more: the users and groups that ACL names are
// not the file's group, and a mask opened by a later chmod would let them
// read it. A file with none (ENODATA), or on a filesystem without ACLs
// (EOPNOTSUPP), is as it should be.
func dropACL(f *os.File) error {
	err := ignoringEINTR(func() error { return unix.Fremovexattr(int(f.Fd()), "system.posix_acl_access") })
	if err == nil || errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return err
}

// carriesACL says whether f carries an access ACL. A file whose ACL cannot be
// read is taken to carry none: it would be written again at every fill,
// and its programs restarted each time.
func carriesACL(f *os.File) bool {
	var n int
	err := ignoringEINTR(func() (err error) {
		n, err = unix.Fgetxattr(int(f.Fd()), "system.posix_acl_access", nil)
		return err
	})
	return err == nil && n > 0
}
