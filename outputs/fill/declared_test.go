package fill

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawDelete sends DELETE /v1/modules/<module> over the socket and returns
// the status and the body as the wire carries it.
func rawDelete(t *testing.T, sock, module string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequest(http.MethodDelete, "http://fill"+ModulesPath+url.PathEscape(module), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// SPEC §4.3: DELETE answers 200 {"files": [...]}: a list, also when the
// module held only files a removal leaves (seed, managed-keys), and a
// module held nothing of answers 200 with no files whatever its name.
func TestDeleteAnswersAListOfFilesEvenWhenNoneWasRemoved(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
		{Path: "/etc/m/s", Form: FormSeed, Content: []byte("s\n")},
		{Path: "/etc/m/k", Form: FormManagedKeys, Content: []byte("A=1\n")},
	}})
	for _, m := range []string{"m", "never-here", "a b", "tab\tx"} {
		if st, body := rawDelete(t, c.Socket, m); st != http.StatusOK || body != `{"files":[]}` {
			t.Errorf("DELETE %q: %d %s, want 200 {\"files\":[]}", m, st, body)
		}
	}
	mustRead(t, filepath.Join(root, "etc/m/s"), "s\n")
	mustRead(t, filepath.Join(root, "etc/m/k"), "A=1\n")
}

// A module's name may hold a space (SPEC §2.1: any byte, encoded in keys):
// its files are filled, its block is its own, and DELETE removes them. A
// control character, or a space at an end (block markers are matched
// trimmed), is refused naming the module.
func TestAModuleNameWithASpaceIsFilledAndRemoved(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	writeFile(t, filepath.Join(root, "etc/hosts"), "top\n")
	fillOK(t, c, Request{Module: "a", Files: []File{{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("a\n")}}})
	fillOK(t, c, Request{Module: "a b", Whole: true, Files: []File{
		{Path: "/etc/ab.conf", Form: FormOwned, Content: []byte("ab\n")},
		{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("ab\n")},
	}})
	mustRead(t, filepath.Join(root, "etc/hosts"), "top\n# BEGIN mesh a\na\n# END mesh a\n# BEGIN mesh a b\nab\n# END mesh a b\n")
	files, err := c.Delete(context.Background(), "a b")
	if err != nil || len(files) != 2 {
		t.Fatalf("DELETE \"a b\": %v %v", files, err)
	}
	mustAbsent(t, filepath.Join(root, "etc/ab.conf"))
	mustRead(t, filepath.Join(root, "etc/hosts"), "top\n# BEGIN mesh a\na\n# END mesh a\n")

	for _, m := range []string{"a\nb", "a ", " a"} {
		_, err := c.Fill(context.Background(), Request{Module: m, Files: []File{{Path: "/etc/x", Form: FormOwned, Content: []byte("x")}}})
		if se, ok := err.(*StatusError); !ok || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, strings.ReplaceAll(m, "\n", `\n`)) {
			t.Errorf("module %q: %v, want a 400 naming it", m, err)
		}
	}
	mustAbsent(t, filepath.Join(root, "etc/x"))
}

// SPEC §4.3 (r2): what the declaration no longer names is removed. A
// module that wrote a path as a managed-block and now names it in another
// form loses its block there; the rest of the file is kept.
func TestABlockNoLongerDeclaredGoesWhenItsPathChangesForm(t *testing.T) {
	for _, tc := range []struct {
		form, content, want, action string
	}{
		{FormManagedKeys, "K=1\n", "top\nK=1\n", ActionMerged},
		{FormSeed, "seed\n", "top\n", ActionMerged},
		{FormOwned, "owned\n", "owned\n", ActionWritten},
	} {
		t.Run(tc.form, func(t *testing.T) {
			root := t.TempDir()
			c := startServer(t, &Server{Root: root})
			writeFile(t, filepath.Join(root, "etc/f"), "top\n")
			fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/f", Form: FormManagedBlock, Content: []byte("x\n")}}})
			resp := fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/f", Form: tc.form, Content: []byte(tc.content)}}})
			if len(resp.Files) != 1 || resp.Files[0].Action != tc.action {
				t.Errorf("answer %+v, want one file %s", resp.Files, tc.action)
			}
			mustRead(t, filepath.Join(root, "etc/f"), tc.want)
			// and again: nothing more to change
			if resp := fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/f", Form: tc.form, Content: []byte(tc.content)}}}); resp.Files[0].Action == ActionMerged || resp.Files[0].Action == ActionWritten {
				t.Errorf("second fill: %+v", resp.Files)
			}
		})
	}
}

// A path the module wrote owned and now manages a block or keys in: the
// owned text was all the module's and the new declaration does not name
// it, so it goes; the file holds the block or the keys alone, and the
// module's removal leaves nothing of it.
func TestAnOwnedFileTurnedManagedLosesTheOwnedText(t *testing.T) {
	for _, tc := range []struct{ form, content, want, afterDelete string }{
		{FormManagedKeys, "a=3\n", "a=3\n", "a=3\n"},
		{FormManagedBlock, "a=3\n", "# BEGIN mesh m\na=3\n# END mesh m\n", ""},
	} {
		t.Run(tc.form, func(t *testing.T) {
			root := t.TempDir()
			c := startServer(t, &Server{Root: root})
			fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/f", Form: FormOwned, Content: []byte("a=1\nb=2\n")}}})
			fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/f", Form: tc.form, Content: []byte(tc.content)}}})
			mustRead(t, filepath.Join(root, "etc/f"), tc.want)
			if _, err := c.Delete(context.Background(), "m"); err != nil {
				t.Fatal(err)
			}
			mustRead(t, filepath.Join(root, "etc/f"), tc.afterDelete)
		})
	}
}

// Two modules' blocks in one file, declared with different modes (0644,
// and 0600 for a block holding a secret): the file ends at the stricter
// mode and the refill ticks after change nothing, so neither module's
// program is restarted for the other's mode.
func TestModulesSharingAPathWithDifferentModesSettleOnTheStricter(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "programs.log")
	c := startServer(t, &Server{Root: root, Command: logCommand(log)})
	a := Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/shared", Form: FormManagedBlock, Content: []byte("a\n"), Mode: "0644",
		OnChange: OnChange{Action: OnChangeRestart, Unit: "a.service"}}}}
	b := Request{Module: "b", Whole: true, Files: []File{{Path: "/etc/shared", Form: FormManagedBlock, Content: []byte("b\n"), Mode: "0600",
		OnChange: OnChange{Action: OnChangeRestart, Unit: "b.service"}}}}
	fillOK(t, c, a)
	fillOK(t, c, b)
	before := len(runs(t, log))
	for tick := range 3 {
		for _, req := range []Request{a, b} {
			if r := fillOK(t, c, req); r.Files[0].Action != ActionUnchanged {
				t.Errorf("tick %d, module %s: %s, want unchanged", tick, req.Module, r.Files[0].Action)
			}
		}
	}
	if got := runs(t, log); len(got) != before {
		t.Errorf("programs run at ticks that changed nothing: %q", got[before:])
	}
	fi, err := os.Stat(filepath.Join(root, "etc/shared"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("shared file's mode: %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

// A 409 for a path another module's declaration holds says which path
// and which module holds it (errorBody.Path and Holder, StatusError.Held
// and Holder): the client lets go of what its module no longer names
// without it, and learns who holds it. A key claimed twice names the path
// and its holder too, and the key (errorBody.Key, StatusError.HeldKey):
// the path is shared, so the client does not leave it out (that would let
// go of nothing held elsewhere), but tells a module that left from a clash.
func TestAConflictOverAPathHeldElsewhereNamesThePath(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	fillOK(t, c, Request{Module: "b", Whole: true, Files: []File{
		{Path: "/etc/p2", Form: FormOwned, Content: []byte("b\n")},
		{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("K=1\n")},
	}})
	_, err := c.Fill(context.Background(), Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/p2", Form: FormOwned, Content: []byte("a\n")}}})
	if se, ok := err.(*StatusError); !ok || se.Status != http.StatusConflict || se.Held != "/etc/p2" || se.Holder != "b" {
		t.Errorf("owned path held by b: %#v", err)
	}
	_, err = c.Fill(context.Background(), Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("K=2\n")}}})
	if se, ok := err.(*StatusError); !ok || se.Status != http.StatusConflict || se.Held != "/etc/env" || se.Holder != "b" || se.HeldKey != "K" {
		t.Errorf("key claimed twice: %#v", err)
	}
}
