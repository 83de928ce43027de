package fill

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnedWritesBytesAndMode(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	grp, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("name = \"ace\"\nport = 8080\n")
	req := Request{Module: "claude-code", Files: []File{{
		Path: "/etc/claude-code/config.toml", Form: FormOwned, Content: body,
		Owner: me.Username, Group: grp.Name, Mode: "0640",
	}}}

	resp := fillOK(t, c, req)
	if got := resp.Files[0]; got.Action != ActionWritten || got.Digest != sha(body) || got.Path != req.Files[0].Path {
		t.Fatalf("first fill: %+v", got)
	}
	if resp.Program != nil || resp.Programs != nil {
		t.Errorf("no unit named, yet programs %+v", resp.Programs)
	}
	p := filepath.Join(root, "etc/claude-code/config.toml")
	if got := readFile(t, p); got != string(body) {
		t.Fatalf("on disk %q", got)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %04o, want 0640", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(p)); !di.IsDir() {
		t.Errorf("parent not made")
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}

	resp = fillOK(t, c, req)
	if got := resp.Files[0]; got.Action != ActionUnchanged || got.Digest != sha(body) {
		t.Fatalf("second fill: %+v", got)
	}

	// a mode change alone counts as written
	req.Files[0].Mode = "0600"
	resp = fillOK(t, c, req)
	if got := resp.Files[0].Action; got != ActionWritten {
		t.Errorf("mode change: action %s, want written", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}

	// an owned file changed on disk is put back
	writeFile(t, p, "tampered\n")
	os.Chmod(p, 0o600)
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Errorf("put back: action %s", got)
	}
	if got := readFile(t, p); got != string(body) {
		t.Errorf("not put back: %q", got)
	}
}

func TestDefaultModeAndNoRoot(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, &Server{})
	p := filepath.Join(dir, "a", "b", "file")
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: p, Form: FormOwned, Content: []byte("x")}}})
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != DefaultMode {
		t.Errorf("mode %04o, want %04o", fi.Mode().Perm(), DefaultMode)
	}
}

func TestSeedKeptWhenPresent(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "var/lib/app/seed")
	req := Request{Module: "m", Files: []File{{Path: "/var/lib/app/seed", Form: FormSeed, Content: []byte("first\n")}}}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Fatalf("absent seed: action %s", got)
	}
	if got := readFile(t, p); got != "first\n" {
		t.Fatalf("on disk %q", got)
	}
	writeFile(t, p, "edited by hand\n")
	req.Files[0].Content = []byte("second\n")
	got := fillOK(t, c, req).Files[0]
	if got.Action != ActionKept || got.Digest != sha([]byte("edited by hand\n")) {
		t.Fatalf("present seed: %+v", got)
	}
	if s := readFile(t, p); s != "edited by hand\n" {
		t.Errorf("seed overwritten: %q", s)
	}
}

func TestManagedKeysMergeKeepsOtherLines(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/default/app")
	writeFile(t, p, "# settings\nA=1\n  B = 2\n\nC=3")
	os.Chmod(p, 0o600)
	req := Request{Module: "m", Files: []File{{Path: "/etc/default/app", Form: FormManagedKeys, Content: []byte("B=20\nD=4\n")}}}

	want := "# settings\nA=1\nB=20\n\nC=3\nD=4\n"
	got := fillOK(t, c, req).Files[0]
	if got.Action != ActionMerged || got.Digest != sha([]byte(want)) {
		t.Fatalf("merge: %+v", got)
	}
	if s := readFile(t, p); s != want {
		t.Fatalf("on disk %q, want %q", s, want)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("a managed file without a mode should keep its own; got %04o", fi.Mode().Perm())
	}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionUnchanged {
		t.Errorf("second merge: %s", got)
	}

	// absent: created with the lines
	req.Files[0].Path = "/etc/default/new"
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Errorf("absent: %s", got)
	}
	if s := readFile(t, filepath.Join(root, "etc/default/new")); s != "B=20\nD=4\n" {
		t.Errorf("created %q", s)
	}
}

func TestManagedBlockInsertThenReplace(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/hosts")
	writeFile(t, p, "127.0.0.1 localhost")
	req := Request{Module: "gitea", Files: []File{{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("10.0.0.1 gitea\n")}}}

	want := "127.0.0.1 localhost\n# BEGIN mesh gitea\n10.0.0.1 gitea\n# END mesh gitea\n"
	if got := fillOK(t, c, req).Files[0]; got.Action != ActionMerged || got.Digest != sha([]byte(want)) {
		t.Fatalf("insert: %+v", got)
	}
	if s := readFile(t, p); s != want {
		t.Fatalf("on disk %q", s)
	}

	writeFile(t, p, readFile(t, p)+"::1 localhost6\n")
	req.Files[0].Content = []byte("10.0.0.2 gitea")
	want = "127.0.0.1 localhost\n# BEGIN mesh gitea\n10.0.0.2 gitea\n# END mesh gitea\n::1 localhost6\n"
	if got := fillOK(t, c, req).Files[0].Action; got != ActionMerged {
		t.Fatalf("replace: %s", got)
	}
	if s := readFile(t, p); s != want {
		t.Fatalf("on disk %q, want %q", s, want)
	}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionUnchanged {
		t.Errorf("again: %s", got)
	}

	// another module's block sits beside it
	req2 := Request{Module: "zsh", Files: []File{{Path: "/etc/hosts", Form: FormManagedBlock, Content: []byte("x\n")}}}
	fillOK(t, c, req2)
	if s := readFile(t, p); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, "# BEGIN mesh zsh\nx\n# END mesh zsh\n") {
		t.Errorf("two blocks: %q", s)
	}
}

func TestManagedBlockRefusesBrokenMarkers(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/conf")
	writeFile(t, p, "a\n# BEGIN mesh m\nold\n")
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/etc/conf", Form: FormManagedBlock, Content: []byte("s3cr3t\n")}}})
	if err == nil || !strings.Contains(err.Error(), "without") || !strings.Contains(err.Error(), "/etc/conf") {
		t.Fatalf("want a refusal naming the missing end marker, got %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("content in error: %v", err)
	}
	if s := readFile(t, p); s != "a\n# BEGIN mesh m\nold\n" {
		t.Errorf("file changed: %q", s)
	}
}

func TestMergeKeysUnit(t *testing.T) {
	pairs := []keyLine{{"A", "A=9"}, {"Z", "Z=1"}}
	cases := []struct{ in, want string }{
		{"", "A=9\nZ=1\n"},
		{"A=1\nA=2\n", "A=9\nA=9\nZ=1\n"},
		{"# A=1\nB=2", "# A=1\nB=2\nA=9\nZ=1\n"},
		{"x\nZ=0\n", "x\nZ=1\n" + "A=9\n"},
	}
	for _, c := range cases {
		if got := string(mergeKeys([]byte(c.in), pairs)); got != c.want {
			t.Errorf("mergeKeys(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Without --root a parent directory may be a symlink (on a real machine
// /var/run links to /run); the target itself never may.
func TestWithoutARootASymlinkedParentIsFollowedButASymlinkedTargetIsNot(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "run")
	os.MkdirAll(real, 0o755)
	if err := os.Symlink(real, filepath.Join(dir, "var-run")); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, &Server{})
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: filepath.Join(dir, "var-run", "app.pid"), Form: FormOwned, Content: []byte("42\n")}}})
	if got := readFile(t, filepath.Join(real, "app.pid")); got != "42\n" {
		t.Fatalf("through the linked parent: %q", got)
	}
	os.Symlink(filepath.Join(real, "app.pid"), filepath.Join(dir, "pid-link"))
	if _, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: filepath.Join(dir, "pid-link"), Form: FormOwned, Content: []byte("x")}}}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked target was not refused: %v", err)
	}
}
