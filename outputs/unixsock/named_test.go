package unixsock

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTheListenerNamesThePathItIsReachedBy: the listener's address, and
// an error of its Accept, name the path the socket was bound at, not the
// temporary name it was bound under (gone once renamed). Before, a
// mesh-fill out of file descriptors logged "accept unix
// /run/x/.sock-2333176946/s: too many open files", a path an operator
// finds nothing at.
func TestTheListenerNamesThePathItIsReachedBy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fill.sock")
	ln, err := Listen(path, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	if got := ln.Addr().String(); got != path {
		t.Errorf("Addr() is %q, want %q", got, path)
	}
	ln.Close()
	_, err = ln.Accept()
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), ".sock-") {
		t.Errorf("Accept after Close: %v; want an error naming %s alone", err, path)
	}
}
