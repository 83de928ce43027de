package fill

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestModuleNamesOfAnyShapeStayInTheStateDir: a module's name may hold
// any byte (SPEC §2.1): one holding `/`, `..`, `%`, a space or a
// backslash is filled and removed (DELETE with the slash escaped, as the
// client sends it) like any other, and its state is a file of the state
// dir named by a digest, nothing written beside or above it.
func TestModuleNamesOfAnyShapeStayInTheStateDir(t *testing.T) {
	root := t.TempDir()
	top := t.TempDir()
	state := filepath.Join(top, "state")
	c := startServer(t, &Server{Root: root, StateDir: state})
	names := []string{"a/b", "..", "../../escape", "/", "a b", "%2F", `x\y`, "ü/../.."}
	for i, m := range names {
		fillOK(t, c, Request{Module: m, Whole: true, Files: []File{
			{Path: fmt.Sprintf("/etc/m%d.conf", i), Form: FormOwned, Content: []byte(m)},
			{Path: "/etc/shared", Form: FormManagedBlock, Content: []byte(fmt.Sprintf("line %d\n", i))},
		}})
	}
	if got := len(stateFiles(t, state)); got != len(names) {
		t.Errorf("%d state files for %d modules", got, len(names))
	}
	if entries, _ := os.ReadDir(top); len(entries) != 1 {
		t.Errorf("beside the state dir: %v", entries)
	}
	for i, m := range names {
		files, err := c.Delete(t.Context(), m)
		if err != nil || len(files) != 2 {
			t.Errorf("DELETE %q: %v, %v; want its two files removed", m, files, err)
		}
		mustAbsent(t, filepath.Join(root, fmt.Sprintf("etc/m%d.conf", i)))
	}
	mustRead(t, filepath.Join(root, "etc/shared"), "")
	if got := stateFiles(t, state); len(got) != 0 {
		t.Errorf("state files left: %v", got)
	}
}

// TestAModuleNameOverMaxModuleBytesIsRefused: a name of 10,000 bytes is
// refused (400) naming the limit, its error and log cut to a few dozen
// bytes of it, and nothing is written, no state either. Before, it was
// taken: its markers, state file, 409s and every "file filled" log line
// carried it whole (a name may be as long as a body, 86 MB). A control
// character (NUL, a line break) is refused as before; a DELETE of any such
// name holds nothing and answers 200, no files.
func TestAModuleNameOverMaxModuleBytesIsRefused(t *testing.T) {
	if MaxModuleBytes != spec.MaxNameBytes {
		t.Errorf("MaxModuleBytes %d, the client's names are at most %d bytes encoded", MaxModuleBytes, spec.MaxNameBytes)
	}
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	c := startServer(t, &Server{Root: root, StateDir: state})
	long := strings.Repeat("m", 10_000)
	for _, tc := range []struct{ name, module, says string }{
		{"10,000 bytes", long, fmt.Sprintf("is 10000 bytes long; a module's name is at most %d", MaxModuleBytes)},
		{"one over", strings.Repeat("m", MaxModuleBytes+1), fmt.Sprintf("is %d bytes long", MaxModuleBytes+1)},
		{"NUL", "a\x00b", "control character"},
		{"line break", "a\nb", "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Fill(t.Context(), Request{Module: tc.module, Whole: true, Files: []File{
				{Path: "/etc/x.conf", Form: FormOwned, Content: []byte("x\n")}}})
			wantStatus(t, err, http.StatusBadRequest, tc.says)
			if err != nil && len(err.Error()) > 400 {
				t.Errorf("the error holds the name whole: %d bytes", len(err.Error()))
			}
			files, err := c.Delete(t.Context(), tc.module)
			if err != nil || len(files) != 0 {
				t.Errorf("DELETE: %v, %v; want 200, no files", files, err)
			}
		})
	}
	mustAbsent(t, filepath.Join(root, "etc"))
	if got := stateFiles(t, state); len(got) != 0 {
		t.Errorf("state files: %v", got)
	}
	// the longest a client sends is taken
	fillOK(t, c, Request{Module: strings.Repeat("m", MaxModuleBytes), Files: []File{{Path: "/etc/x.conf", Form: FormOwned, Content: []byte("x\n")}}})
}

// TestALongModuleNameIsLoggedCut: a request of a 10,000-byte module name
// refused while it is decoded (over MaxFiles) logs 40 bytes of the name,
// not the name whole (a name may be as long as a body).
func TestALongModuleNameIsLoggedCut(t *testing.T) {
	var log lockedLog
	c := serveOn(t, &Server{Root: t.TempDir(), Log: zerolog.New(&log)})
	req := Request{Module: strings.Repeat("m", 10_000)}
	for i := range MaxFiles + 1 {
		req.Files = append(req.Files, File{Path: fmt.Sprintf("/d/%d", i), Form: FormOwned})
	}
	_, err := c.Fill(t.Context(), req)
	wantStatus(t, err, http.StatusBadRequest, "more than")
	if got := log.String(); !strings.Contains(got, "fill refused") || strings.Contains(got, strings.Repeat("m", 100)) {
		t.Errorf("the log holds the name whole, or no refusal (%d bytes): %.300s", len(got), got)
	}
}

// lockedLog is a log writer safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
