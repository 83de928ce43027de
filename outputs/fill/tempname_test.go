package fill

import (
	"net/http"
	"path/filepath"
	"testing"
)

// TestAPathNamedAsATempFileIsRefused: a file named as mesh-fill names its
// temp files (".app.conf.mesh-fill-tmp-" and 16 hex digits) is refused
// (400): it would be swept away as a stale temp file by the next whole
// request of the module holding /etc/app.conf, or by the next start.
// Before, it was written, and the other module's refill removed it.
func TestAPathNamedAsATempFileIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	owner := Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/app.conf", Form: FormOwned, Content: []byte("a\n")}}}
	fillOK(t, c, owner)
	temp := "/etc/" + tempPrefix("app.conf") + "0123456789abcdef"
	_, err := c.Fill(t.Context(), Request{Module: "b", Whole: true, Files: []File{{Path: temp, Form: FormOwned, Content: []byte("b\n")}}})
	wantStatus(t, err, http.StatusBadRequest, temp, "mesh-fill's temp files")
	fillOK(t, c, owner)
	mustAbsent(t, filepath.Join(root, temp))
}
