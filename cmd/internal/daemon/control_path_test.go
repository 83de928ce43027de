package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// pathOf is a path of exactly n bytes under dir ending in base: the
// directories between are padded to fit.
func pathOf(t *testing.T, dir string, n int, base string) string {
	t.Helper()
	pad := n - len(dir) - 2 - len(base)
	if pad < 1 {
		t.Fatalf("%s is too long for a %d-byte path", dir, n)
	}
	p := filepath.Join(dir, strings.Repeat("d", pad), base)
	if len(p) != n {
		t.Fatalf("%d bytes, want %d", len(p), n)
	}
	return p
}

func TestAControlPathUpToTheUnixLimitIsBoundAndALongerOneIsRefusedSayingSo(t *testing.T) {
	m := newMesh(t)
	for i, c := range []struct {
		n    int
		base string
	}{{97, "c.sock"}, {control.MaxSocketPath, "c.sock"}, {control.MaxSocketPath, "c"}} {
		t.Run(fmt.Sprintf("%d bytes, %s", c.n, c.base), func(t *testing.T) {
			sock := pathOf(t, filepath.Dir(ctlSock(t)), c.n, c.base)
			node := fmt.Sprintf("n%d", i)
			m.client(node, withControl(sock))
			bustest.Eventually(t, 10*time.Second, func() error {
				code, b, err := control.NewClient(sock, 5*time.Second).Get(context.Background(), "/v1/modules")
				if err != nil || code != http.StatusOK || !strings.Contains(string(b), `"node": "`+node+`"`) {
					return fmt.Errorf("%d %v %s", code, err, b)
				}
				return nil
			})
			st, err := os.Stat(sock)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("%v %v", err, st.Mode())
			}
			if left, _ := os.ReadDir(filepath.Dir(sock)); len(left) != 1 {
				t.Fatalf("a temporary name is left beside the socket: %v", left)
			}
		})
	}
	long := pathOf(t, filepath.Dir(ctlSock(t)), control.MaxSocketPath+1, "c.sock")
	_, err := New(Config{Node: "ace", Control: long, Log: zerolog.Nop()})
	if err == nil || !strings.Contains(err.Error(), long) ||
		!strings.Contains(err.Error(), fmt.Sprintf("is %d bytes, longer than a unix socket's limit of %d", control.MaxSocketPath+1, control.MaxSocketPath)) {
		t.Fatalf("%v", err)
	}
}
