package fill

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestImmutableAndReadOnlyTargetsAreHinted: a file mesh-fill may not
// replace though it is root, because it is immutable (chattr +i) or on a
// filesystem mounted read-only, fails (5xx) with a hint saying which, so
// the operator is not left with a bare "operation not permitted" from a
// process running as root.
func TestImmutableAndReadOnlyTargetsAreHinted(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})

	t.Run("immutable", func(t *testing.T) {
		p := filepath.Join(root, "etc/immutable.conf")
		writeFile(t, p, "old\n")
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			t.Skipf("chattr +i: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/etc/immutable.conf", Form: FormOwned, Content: []byte("new\n")}}})
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.Status < 500 {
			t.Fatalf("filling an immutable file: %v, want a 5xx", err)
		}
		if !strings.Contains(se.Msg, "immutable") || !strings.Contains(se.Msg, "chattr") {
			t.Errorf("error %q should hint that the file or its directory is immutable (chattr)", se.Msg)
		}
		mustRead(t, p, "old\n")
	})

	t.Run("read-only", func(t *testing.T) {
		d := filepath.Join(root, "ro")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(d, d, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("cannot bind-mount here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
		if err := unix.Mount(d, d, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Skipf("cannot remount read-only here: %v", err)
		}
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/ro/x.conf", Form: FormOwned, Content: []byte("x\n")}}})
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.Status < 500 {
			t.Fatalf("filling a file on a read-only filesystem: %v, want a 5xx", err)
		}
		if !strings.Contains(se.Msg, "mounted read-only") {
			t.Errorf("error %q should hint that the filesystem is mounted read-only", se.Msg)
		}
	})
}
