package fill

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// results maps each result's path to its action.
func results(files []FileResult) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = f.Action
	}
	return out
}

// TestAWholeRequestRemovesWhatItNoLongerNames: the owned file a whole
// request leaves out is removed and the managed-block file loses the
// module's block (and only it); the seed and managed-keys files stay as
// they are; each removal is answered "removed". A request without whole
// removes nothing.
func TestAWholeRequestRemovesWhatItNoLongerNames(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	writeFile(t, filepath.Join(root, "etc/shared.conf"), "top\n")
	writeFile(t, filepath.Join(root, "etc/env"), "KEEP=1\n")
	all := []File{
		{Path: "/etc/m/keep.conf", Form: FormOwned, Content: []byte("keep\n")},
		{Path: "/etc/m/gone.conf", Form: FormOwned, Content: []byte("gone\n")},
		{Path: "/etc/shared.conf", Form: FormManagedBlock, Content: []byte("m's line\n")},
		{Path: "/etc/m/seed", Form: FormSeed, Content: []byte("seed\n")},
		{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("M=1\n")},
	}
	fillOK(t, c, Request{Module: "m", Whole: true, Files: all})
	// another module's block in the same file stays
	fillOK(t, c, Request{Module: "n", Whole: true, Files: []File{{Path: "/etc/shared.conf", Form: FormManagedBlock, Content: []byte("n's line\n")}}})

	// changed files alone: nothing removed
	resp := fillOK(t, c, Request{Module: "m", Files: all[:1]})
	if got := results(resp.Files); len(got) != 1 {
		t.Fatalf("a request without whole answered %v", got)
	}
	mustRead(t, filepath.Join(root, "etc/m/gone.conf"), "gone\n")

	resp, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: all[:1]})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/etc/m/keep.conf": ActionUnchanged, "/etc/m/gone.conf": ActionRemoved, "/etc/shared.conf": ActionRemoved}
	if got := results(resp.Files); !maps.Equal(got, want) {
		t.Errorf("answer %v, want %v", got, want)
	}
	mustAbsent(t, filepath.Join(root, "etc/m/gone.conf"))
	mustRead(t, filepath.Join(root, "etc/shared.conf"), "top\n# BEGIN mesh n\nn's line\n# END mesh n\n")
	mustRead(t, filepath.Join(root, "etc/m/seed"), "seed\n")
	mustRead(t, filepath.Join(root, "etc/env"), "KEEP=1\nM=1\n")
	noTempFiles(t, root)

	// once removed, a whole request removes it no more
	resp = fillOK(t, c, Request{Module: "m", Whole: true, Files: all[:1]})
	if resp.Files[0].Action != ActionUnchanged {
		t.Errorf("again: %+v", resp.Files)
	}
}

// TestDeleteRemovesEveryFileOfTheModule: DELETE /v1/modules/<module>
// removes the module's owned files and blocks, leaves its seed, answers
// each removed, and forgets the module: its paths are free for another.
// A module it holds nothing of is 200 with no files.
func TestDeleteRemovesEveryFileOfTheModule(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "web/a", Whole: true, Files: []File{
		{Path: "/etc/web/a.conf", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("10.0.0.1 web\n")},
		{Path: "/etc/web/seed", Form: FormSeed, Content: []byte("s\n")},
	}})

	files, err := c.Delete(t.Context(), "web/a")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/etc/web/a.conf": ActionRemoved, "/etc/hosts": ActionRemoved}
	if got := results(files); !maps.Equal(got, want) {
		t.Errorf("answer %v, want %v", got, want)
	}
	mustAbsent(t, filepath.Join(root, "etc/web/a.conf"))
	mustRead(t, filepath.Join(root, "etc/hosts"), "")
	mustRead(t, filepath.Join(root, "etc/web/seed"), "s\n")

	// forgotten: another module may write its path, and a second DELETE
	// has nothing to remove
	fillOK(t, c, Request{Module: "b", Files: []File{{Path: "/etc/web/a.conf", Form: FormOwned, Content: []byte("b\n")}}})
	for _, m := range []string{"web/a", "never-here"} {
		files, err = c.Delete(t.Context(), m)
		if err != nil || len(files) != 0 {
			t.Errorf("DELETE %s: %v, %v", m, files, err)
		}
	}
	mustRead(t, filepath.Join(root, "etc/web/a.conf"), "b\n")
}

// TestOneOwnerPerPath: an owned or seed path is one module's: another
// module naming it is refused 409 naming the path and both modules, and
// nothing of its request is written; managed-block paths are shared, and
// managed-keys paths too unless a key is claimed twice; neither shares a
// path with an owned one. The client's error carries the status.
func TestOneOwnerPerPath(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{
		{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/seed", Form: FormSeed, Content: []byte("seed\n")},
		{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("a\n")},
		{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("A=1\nSHARED=a\n")},
	}})

	for _, tc := range []struct {
		name string
		f    File
		says []string
	}{
		{"owned over owned", File{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("b\n")}, []string{`path "/etc/a.conf"`, `module "a"`, `module "b"`}},
		{"seed over seed", File{Path: "/etc/seed", Form: FormSeed, Content: []byte("b\n")}, []string{`path "/etc/seed"`, `module "a"`, `module "b"`}},
		{"block over owned", File{Path: "/etc/a.conf", Form: FormManagedBlock, Content: []byte("b\n")}, []string{`path "/etc/a.conf"`, `module "a"`, `module "b"`}},
		{"owned over block", File{Path: "/etc/hosts", Form: FormOwned, Content: []byte("b\n")}, []string{`path "/etc/hosts"`, `module "a"`, `module "b"`}},
		{"keys over seed", File{Path: "/etc/seed", Form: FormManagedKeys, Content: []byte("B=1\n")}, []string{`path "/etc/seed"`, `module "a"`, `module "b"`}},
		{"a key twice", File{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("B=1\nSHARED=b\n")}, []string{`path "/etc/env"`, `key "SHARED"`, `module "a"`, `module "b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Fill(t.Context(), Request{Module: "b", Whole: true, Files: []File{
				{Path: "/etc/b.conf", Form: FormOwned, Content: []byte("b\n")}, tc.f}})
			var se *StatusError
			if !errors.As(err, &se) || se.Status != http.StatusConflict {
				t.Fatalf("want a 409, got %v", err)
			}
			for _, s := range tc.says {
				if !strings.Contains(se.Msg, s) {
					t.Errorf("%q does not say %s", se.Msg, s)
				}
			}
			mustAbsent(t, filepath.Join(root, "etc/b.conf"))
		})
	}
	for p, want := range map[string]string{"etc/a.conf": "a\n", "etc/seed": "seed\n",
		"etc/hosts": "# BEGIN mesh a\na\n# END mesh a\n", "etc/env": "A=1\nSHARED=a\n"} {
		mustRead(t, filepath.Join(root, p), want)
	}

	// shared: each its block, each its keys
	fillOK(t, c, Request{Module: "b", Whole: true, Files: []File{
		{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("b\n")},
		{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("B=1\n")},
	}})
	mustRead(t, filepath.Join(root, "etc/hosts"), "# BEGIN mesh a\na\n# END mesh a\n# BEGIN mesh b\nb\n# END mesh b\n")
	mustRead(t, filepath.Join(root, "etc/env"), "A=1\nSHARED=a\nB=1\n")

	// a module's own path, written in another form by it, is no conflict;
	// and once a no longer names a path, b may have it
	if _, err := c.Fill(t.Context(), Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/seed", Form: FormOwned, Content: []byte("a owns\n")}}}); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, Request{Module: "b", Files: []File{{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("b\n")}}})
	mustRead(t, filepath.Join(root, "etc/a.conf"), "b\n")
}

// TestStatusErrorOfTheClient: a refusal reaches the client as a
// *StatusError with the status and the server's text.
func TestStatusErrorOfTheClient(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{{Path: "rel", Form: FormOwned}}})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, `path "rel" is relative`) ||
		!strings.Contains(err.Error(), "400 Bad Request") {
		t.Fatalf("got %#v", err)
	}
}
