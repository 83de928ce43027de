package fill

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// hinted adds to a failure (5xx) what an operator looks at first when a
// process running as root may not write a file: a filesystem mounted
// read-only (EROFS), or a file or directory made immutable or
// append-only (EPERM: chattr +i or +a, which root's writes meet too).
func hinted(err error) error {
	switch {
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("%w (hint: the filesystem is mounted read-only; remount it read-write, or name a path on another)", err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w (hint: not permitted though mesh-fill runs as root: the file or its directory may be immutable or "+
			"append-only, chattr +i or +a, which lsattr shows as i or a; chattr -i or -a lifts it; or a security module such as "+
			"SELinux or AppArmor forbids it)", err)
	}
	return err
}
