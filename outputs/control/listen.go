package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/novox/mesh-provisioner/outputs/unixsock"
)

// Listen binds the control socket at path so that it is never reachable
// with a wider mode than 0600: bound under a temporary name beside path,
// made 0600, only then renamed into place. It refuses when another client
// answers at path. Closing the listener leaves path; the server removes it.
func Listen(path string) (net.Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, errors.New("control socket " + path + ": another client answers on it")
	}
	ln, err := unixsock.Listen(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}
