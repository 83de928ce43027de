package control

import (
	"fmt"

	"github.com/novox/mesh-provisioner/outputs/unixsock"
)

// MaxSocketPath is the longest path a unix socket can be bound or dialled
// at: sockaddr_un's sun_path holds it and its terminating NUL (108 bytes
// on Linux, 104 on the BSDs).
const MaxSocketPath = unixsock.MaxPath

// CheckSocketPath says why path cannot be a unix socket's path: it is too
// long. Without it the kernel's answer is a bare "invalid argument".
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("control socket %s: the path is %d bytes, longer than a unix socket's limit of %d (%d with the terminating NUL)",
			path, len(path), MaxSocketPath, MaxSocketPath+1)
	}
	return nil
}
