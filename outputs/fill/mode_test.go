package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAWorldWritableModeIsRefused: mesh-fill writes, as root, files
// programs trust; one any local user may change (0666, 0777, 0602) would
// be theirs to rewrite until the next refill puts it back. Such a mode is
// refused (400 naming the path and the mode) as a setuid, setgid or
// sticky one is, whatever is on disk (a seed kept too), and nothing of the
// request is written; a mode others may
// not write (0664, 0775, 0640) is written as named.
func TestAWorldWritableModeIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, mode := range []string{"0666", "0777", "0602", "0002", "666"} {
		for _, form := range []string{FormOwned, FormSeed, FormManagedKeys, FormManagedBlock} {
			_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
				{Path: "/ok", Form: FormOwned, Content: []byte("ok\n")},
				{Path: "/f", Form: form, Content: []byte("A=1\n"), Mode: mode},
			}})
			var se *StatusError
			if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, `"/f"`) ||
				!strings.Contains(se.Msg, `mode "`+mode+`"`) || !strings.Contains(se.Msg, "lets others write the file") {
				t.Errorf("%s %s: want a 400 naming the path and mode, saying others may write the file, got %v", form, mode, err)
			}
			mustAbsent(t, filepath.Join(root, "ok"))
			mustAbsent(t, filepath.Join(root, "f"))
		}
	}
	// a seed kept (there already) is refused too: the request is wrong
	// whatever is on disk
	writeFile(t, filepath.Join(root, "seed"), "mine\n")
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/seed", Form: FormSeed, Content: []byte("x"), Mode: "0666"}}})
	if se := (*StatusError)(nil); !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Errorf("a seed kept with mode 0666: want a 400, got %v", err)
	}
	mustRead(t, filepath.Join(root, "seed"), "mine\n")

	for _, mode := range []string{"0664", "0775", "0640", "0"} {
		fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte(mode), Mode: mode}}})
		fi, err := os.Stat(filepath.Join(root, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm().String(); got != parsedMode(t, mode).String() {
			t.Errorf("mode %s written as %s", mode, got)
		}
	}
}

func parsedMode(t *testing.T, s string) os.FileMode {
	t.Helper()
	m, err := parseMode("/f", s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
