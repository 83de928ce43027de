package fill

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
)

// TestARequestOfMoreThanMaxFilesIsRefused: a request naming MaxFiles + 1
// files is refused (400, naming the limit) and nothing of it is written.
// Before, it was processed, each file taking some 2 KB of memory, so that
// a body of MaxBody (2.5 million files) could exhaust the machine's.
func TestARequestOfMoreThanMaxFilesIsRefused(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Whole: true}
	for i := range MaxFiles + 1 {
		req.Files = append(req.Files, File{Path: fmt.Sprintf("/d/%d", i), Form: FormOwned})
	}
	_, err := c.Fill(context.Background(), req)
	wantStatus(t, err, http.StatusBadRequest, fmt.Sprintf("the request names more than %d files; mesh-fill takes at most %d in one request", MaxFiles, MaxFiles))
	mustAbsent(t, filepath.Join(root, "d"))
}
