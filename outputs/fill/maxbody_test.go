package fill

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A whole request whose files are each within the SPEC's 16 MiB but
// together over MaxBody: the client says so, naming the limit, instead of
// "not answering: broken pipe".
func TestARequestOverMaxBodyIsRefusedNamingTheLimit(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"true"}})
	big := bytes.Repeat([]byte("v"), 16<<20)
	req := Request{Module: "big", Whole: true}
	for i := 0; i < 5; i++ {
		req.Files = append(req.Files, File{Path: fmt.Sprintf("/big%d", i), Form: FormOwned, Content: big, Mode: "0644"})
	}
	_, err := c.Fill(t.Context(), req)
	t.Logf("error: %v", err)
	if err == nil || !strings.Contains(err.Error(), "request limit of") {
		t.Fatalf("error %v does not name the request limit", err)
	}
}
