package fill

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkedDir is a temp directory (its own symlinks resolved) holding run/
// and varrun, a symlink to run, as /var/run links to /run on a real host.
func linkedDir(t *testing.T) (dir, run, varrun string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run, varrun = filepath.Join(dir, "run"), filepath.Join(dir, "varrun")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(run, varrun); err != nil {
		t.Fatal(err)
	}
	return dir, run, varrun
}

// wantStatus fails the test unless err is a refusal with status saying
// each of says.
func wantStatus(t *testing.T, err error, status int, says ...string) {
	t.Helper()
	var se *StatusError
	if !errors.As(err, &se) || se.Status != status {
		t.Errorf("want a %d, got %v", status, err)
		return
	}
	for _, s := range says {
		if !strings.Contains(se.Msg, s) {
			t.Errorf("the %d does not say %s: %s", status, s, se.Msg)
		}
	}
}

// TestAllowConfinesWhereAPathLeads: without --root a parent's symlink is
// followed, so a path is allowed only when both the path as named and
// where it leads are inside --allow; else a 403 names both and nothing of
// the request is written. A link that stays inside is followed.
func TestAllowConfinesWhereAPathLeads(t *testing.T) {
	dir, run, varrun := linkedDir(t)
	app, outside := filepath.Join(dir, "app"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(app, "real"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"sub": outside, "in": filepath.Join(app, "real")} {
		if err := os.Symlink(to, filepath.Join(app, link)); err != nil {
			t.Fatal(err)
		}
	}
	c := startServer(t, &Server{Allow: []string{app + "/**", run + "/*"}})
	ok := File{Path: filepath.Join(app, "ok"), Form: FormOwned, Content: []byte("ok\n")}
	for _, tc := range []struct {
		path string
		says []string
	}{
		{filepath.Join(app, "sub", "f"), []string{`"` + filepath.Join(app, "sub", "f") + `"`, `"` + filepath.Join(outside, "f") + `"`, "outside"}},
		{filepath.Join(app, "sub", "new", "f"), []string{`"` + filepath.Join(outside, "new", "f") + `"`}},
		{filepath.Join(varrun, "x"), []string{`"` + filepath.Join(varrun, "x") + `" is outside`}}, // the name outside, where it leads inside
	} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{ok, {Path: tc.path, Form: FormOwned, Content: []byte("x\n")}}})
		wantStatus(t, err, http.StatusForbidden, tc.says...)
		mustAbsent(t, ok.Path)
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("%s: written outside the allow-list: %v", tc.path, entries)
		}
	}
	mustAbsent(t, filepath.Join(run, "x"))

	resp := fillOK(t, c, Request{Module: "m", Files: []File{ok, {Path: filepath.Join(app, "in", "f"), Form: FormOwned, Content: []byte("in\n")}}})
	if got := resp.Files[1].Path; got != filepath.Join(app, "in", "f") {
		t.Errorf("answered %s, not the path as named", got)
	}
	mustRead(t, filepath.Join(app, "real", "f"), "in\n")
}

// TestTwoNamesOfOneFileAreOnePath: ownership is judged where a path
// leads, so a module may not write, under another name, a file another
// module owns (409 naming both modules), nor claim its managed key, nor
// share it owned with another's managed block; each module's answers name
// the path as it named it, and a module renaming its own file neither
// clashes with itself nor removes it.
func TestTwoNamesOfOneFileAreOnePath(t *testing.T) {
	_, run, varrun := linkedDir(t)
	c := startServer(t, &Server{})
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{
		{Path: filepath.Join(run, "x"), Form: FormOwned, Content: []byte("a\n")},
		{Path: filepath.Join(varrun, "k.ini"), Form: FormManagedKeys, Content: []byte("K=a\n")},
		{Path: filepath.Join(run, "hosts"), Form: FormManagedBlock, Content: []byte("a\n")},
	}})
	for _, f := range []File{
		{Path: filepath.Join(varrun, "x"), Form: FormOwned, Content: []byte("b\n")},
		{Path: filepath.Join(varrun, "x"), Form: FormManagedBlock, Content: []byte("b\n")},
		{Path: filepath.Join(run, "k.ini"), Form: FormManagedKeys, Content: []byte("K=b\n")},
		{Path: filepath.Join(varrun, "hosts"), Form: FormSeed, Content: []byte("b\n")},
	} {
		_, err := c.Fill(t.Context(), Request{Module: "b", Whole: true, Files: []File{f}})
		wantStatus(t, err, http.StatusConflict, `"`+f.Path+`"`, `module "a"`, `module "b"`)
	}
	mustRead(t, filepath.Join(run, "x"), "a\n")
	mustRead(t, filepath.Join(run, "k.ini"), "K=a\n")
	mustRead(t, filepath.Join(run, "hosts"), "# BEGIN mesh a\na\n# END mesh a\n")
	// another key of the file, and another block of it, may be b's
	fillOK(t, c, Request{Module: "b", Whole: true, Files: []File{
		{Path: filepath.Join(run, "k.ini"), Form: FormManagedKeys, Content: []byte("L=b\n")},
		{Path: filepath.Join(varrun, "hosts"), Form: FormManagedBlock, Content: []byte("b\n")},
	}})

	// a names its file by its other name: unchanged, and not removed
	resp := fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{
		{Path: filepath.Join(varrun, "x"), Form: FormOwned, Content: []byte("a\n")},
		{Path: filepath.Join(varrun, "k.ini"), Form: FormManagedKeys, Content: []byte("K=a\n")},
		{Path: filepath.Join(run, "hosts"), Form: FormManagedBlock, Content: []byte("a\n")},
	}})
	if got := results(resp.Files); got[filepath.Join(varrun, "x")] != ActionUnchanged {
		t.Errorf("answer %v", got)
	}
	mustRead(t, filepath.Join(run, "x"), "a\n")
	// ... and a DELETE removes it, answered by the name a gave it last
	files, err := c.Delete(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{filepath.Join(varrun, "x"): ActionRemoved, filepath.Join(run, "hosts"): ActionRemoved}
	if got := results(files); !maps.Equal(got, want) {
		t.Errorf("DELETE answered %v, want %v", got, want)
	}
	mustAbsent(t, filepath.Join(run, "x"))
	mustRead(t, filepath.Join(run, "hosts"), "# BEGIN mesh b\nb\n# END mesh b\n")
}

// TestOneFileNamedTwiceInARequestIsRefused: two names of one file in one
// request are a 400 naming both, nothing written.
func TestOneFileNamedTwiceInARequestIsRefused(t *testing.T) {
	_, run, varrun := linkedDir(t)
	c := startServer(t, &Server{})
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
		{Path: filepath.Join(run, "x"), Form: FormOwned, Content: []byte("1\n")},
		{Path: filepath.Join(varrun, "x"), Form: FormOwned, Content: []byte("2\n")},
	}})
	wantStatus(t, err, http.StatusBadRequest, `"`+filepath.Join(run, "x")+`"`, `"`+filepath.Join(varrun, "x")+`"`)
	mustAbsent(t, filepath.Join(run, "x"))
}

// TestAStateFileOfNamedPathsStillLoads: a state file written by an older
// mesh-fill, keyed by the paths as the requests named them, is read as
// where those paths lead: another name of the file is still the module's,
// and a DELETE removes the file, answered by its old name. One written
// now keeps both, through a restart.
func TestAStateFileOfNamedPathsStillLoads(t *testing.T) {
	_, run, varrun := linkedDir(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(run, "x"), "a\n")
	old, err := json.Marshal(map[string]any{"module": "a", "files": map[string]any{
		filepath.Join(varrun, "x"): map[string]any{"form": "owned", "digest": sha([]byte("a\n"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile((&ledger{dir: state}).stateFile("a"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{StateDir: state}, log)
	_, err = c.Fill(t.Context(), Request{Module: "b", Files: []File{{Path: filepath.Join(run, "x"), Form: FormOwned, Content: []byte("b\n")}}})
	wantStatus(t, err, http.StatusConflict, `module "a"`, `module "b"`)
	mustRead(t, filepath.Join(run, "x"), "a\n")
	files, err := c.Delete(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := results(files); !maps.Equal(got, map[string]string{filepath.Join(varrun, "x"): ActionRemoved}) {
		t.Errorf("DELETE answered %v", got)
	}
	mustAbsent(t, filepath.Join(run, "x"))

	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: filepath.Join(varrun, "x"), Form: FormOwned, Content: []byte("a\n")}}})
	stop()
	c, _ = runUntilStopped(t, &Server{StateDir: state}, log)
	_, err = c.Fill(t.Context(), Request{Module: "b", Files: []File{{Path: filepath.Join(run, "x"), Form: FormOwned, Content: []byte("b\n")}}})
	wantStatus(t, err, http.StatusConflict, `module "a"`, `module "b"`)
	if files, err = c.Delete(t.Context(), "a"); err != nil || len(files) != 1 || files[0].Path != filepath.Join(varrun, "x") {
		t.Errorf("DELETE after a restart answered %v, %v", files, err)
	}
	mustAbsent(t, filepath.Join(run, "x"))
}
