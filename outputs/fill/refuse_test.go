package fill

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRefusalsWriteNothing(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	log := filepath.Join(t.TempDir(), "programs.log")
	c := startServer(t, &Server{Root: root, Command: []string{"sh", "-c", `echo "$0 $1" >> ` + log}})

	writeFile(t, filepath.Join(root, "etc/real"), "real\n")
	if err := os.Symlink(filepath.Join(root, "etc/real"), filepath.Join(root, "etc/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "etc"), filepath.Join(root, "etc2")); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, path, form, mode, reason string
	}{
		{"relative", "etc/app.conf", FormOwned, "", "is relative"},
		{"dotdot", "/etc/../app.conf", FormOwned, "", ".. element"},
		{"outside root", "/../../" + strings.TrimPrefix(outside, "/") + "/x", FormOwned, "", ".. element"},
		{"not clean", "/etc//app.conf", FormOwned, "", "not clean"},
		{"symlinked target", "/etc/link", FormOwned, "", "is a symlink"},
		{"symlinked parent dir", "/etc2/new.conf", FormOwned, "", "parent directory /etc2 is a symlink"},
		{"symlinked parent to outside root", "/escape/sub/x", FormOwned, "", "parent directory /escape is a symlink"},
		{"parent is a file", "/etc/real/x", FormOwned, "", "not a directory"},
		{"target is a directory", "/etc", FormOwned, "", "not a regular file"},
		{"unknown form", "/etc/app.conf", "templated", "", "form \"templated\""},
		{"bad mode", "/etc/app.conf", FormOwned, "4755", "mode \"4755\""},
		{"name longer than NAME_MAX", "/etc/" + strings.Repeat("n", 256), FormOwned, "", "element of 256 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Module: "m", Files: []File{
				{Path: "/ok/first", Form: FormOwned, Content: []byte("fine"), OnChange: OnChange{Action: OnChangeRestart, Unit: "app.service"}},
				{Path: tc.path, Form: tc.form, Content: []byte("bad"), Mode: tc.mode},
			}}
			_, err := c.Fill(t.Context(), req)
			if err == nil {
				t.Fatalf("%s was accepted", tc.path)
			}
			msg := err.Error()
			if !strings.Contains(msg, "400") || !strings.Contains(msg, tc.reason) || !strings.Contains(msg, tc.path) {
				t.Errorf("error %q should say 400, %q and name %q", msg, tc.reason, tc.path)
			}
			mustAbsent(t, filepath.Join(root, "ok"))
			if s := readFile(t, filepath.Join(root, "etc/real")); s != "real\n" {
				t.Errorf("symlink target written: %q", s)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("written outside the root: %v", entries)
			}
		})
	}
	// deeper than PATH_MAX: refused before a directory is made (it made
	// every one, holding the module's locks, and the file could not be
	// used by name)
	deep := strings.Repeat("/d", 2048) + "/f"
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: deep, Form: FormOwned, Content: []byte("x")}}})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "4098 bytes long") {
		t.Errorf("a path of %d bytes: %v; want a 400 saying how long it is", len(deep), err)
	}
	mustAbsent(t, filepath.Join(root, "d"))
	mustAbsent(t, log)
	mustAbsent(t, filepath.Join(root, "app.conf"))
	mustAbsent(t, filepath.Join(root, "etc/app.conf"))
}

func TestRefusalsOfRequest(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	cases := []struct {
		name   string
		req    Request
		reason string
	}{
		{"no module", Request{Files: []File{{Path: "/a", Form: FormOwned}}}, "no module"},
		{"twice", Request{Module: "m", Files: []File{{Path: "/a", Form: FormOwned}, {Path: "/a", Form: FormOwned}}}, "named twice"},
		{"unit without name", Request{Module: "m", Files: []File{{Path: "/a", Form: FormOwned, OnChange: OnChange{Action: OnChangeRestart}}}}, "names no unit"},
		{"unit as option", Request{Module: "m", Files: []File{{Path: "/a", Form: FormOwned, OnChange: OnChange{Action: OnChangeRestart, Unit: "--now"}}}}, "not a unit name"},
		{"bad action", Request{Module: "m", Files: []File{{Path: "/a", Form: FormOwned, OnChange: OnChange{Action: "kill", Unit: "a"}}}}, "not restart, reload or none"},
		{"keys not key=value", Request{Module: "m", Files: []File{{Path: "/a", Form: FormManagedKeys, Content: []byte("A=1\npassword s3cr3t\n")}}}, "line 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Fill(t.Context(), tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "400") {
				t.Fatalf("want a 400 saying %q, got %v", tc.reason, err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("content in the error: %v", err)
			}
			mustAbsent(t, filepath.Join(root, "a"))
		})
	}
}

func TestOwnerWhenRoot(t *testing.T) {
	if !canChown() {
		t.Skip("needs root to give files away")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte("x"), Owner: "nobody", Mode: "0640"}}}
	fillOK(t, c, req)
	fi, _ := os.Stat(filepath.Join(root, "f"))
	if uid, _ := ownerOf(fi); strconv.Itoa(uid) != nobody.Uid {
		t.Errorf("uid %d, want %s", uid, nobody.Uid)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %04o after chown", fi.Mode().Perm())
	}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionUnchanged {
		t.Errorf("same owner again: %s", got)
	}
	os.Chown(filepath.Join(root, "f"), 0, 0)
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Errorf("owner put back: %s", got)
	}

	req.Files[0].Owner = "no-such-user-here"
	if _, err := c.Fill(t.Context(), req); err == nil || !strings.Contains(err.Error(), "is not a user") {
		t.Errorf("unknown owner: %v", err)
	}
}

func TestOwnerIgnoredWhenNotRoot(t *testing.T) {
	old := canChown
	canChown = func() bool { return false }
	t.Cleanup(func() { canChown = old })
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte("x"), Owner: "no-such-user-here", Group: "no-such-group"}}}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
		t.Errorf("action %s", got)
	}
}
