package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenBindsMode0600AndRefusesASocketThatAnswers(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "run", "control.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a socket of mode 0600", path, st.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("beside the socket: %v, want the socket alone (no temporary name left)", entries)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another client answers") {
		t.Fatalf("a second Listen: %v, want it refused", err)
	}
}
