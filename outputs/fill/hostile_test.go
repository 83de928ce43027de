package fill

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWhatIsNoRegularFileIsRefusedInEveryForm: a path that is a
// directory, a named pipe, a unix socket or (as root) a device is refused
// (400) whatever the form, and is left as it was: mesh-fill writes, merges
// into and seeds regular files alone.
func TestWhatIsNoRegularFileIsRefusedInEveryForm(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(etc, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(etc, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	kinds := []string{"dir", "fifo", "sock"}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(etc, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, "null")
	}
	before := map[string]os.FileInfo{}
	for _, k := range kinds {
		before[k], _ = os.Lstat(filepath.Join(etc, k))
	}
	for _, k := range kinds {
		for _, form := range []string{FormOwned, FormSeed, FormManagedKeys, FormManagedBlock} {
			_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/etc/" + k, Form: form, Content: []byte("A=1\n"), Mode: "0600"}}})
			wantStatus(t, err, http.StatusBadRequest, "/etc/"+k, "not a regular file")
		}
		fi, err := os.Lstat(filepath.Join(etc, k))
		if err != nil || fi.Mode() != before[k].Mode() || !os.SameFile(fi, before[k]) {
			t.Errorf("/etc/%s changed: %v %v", k, fi, err)
		}
	}
}

// TestHostileFieldsAreRefused: owner and group names no user or group
// has (a line break, a colon: /etc/passwd's separators), unit names with
// a space, a leading `-` or a shell's metacharacters, paths not clean
// (`//`, `/./`, a trailing `/`): each a 400 naming what, nothing written,
// no program run.
func TestHostileFieldsAreRefused(t *testing.T) {
	root := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	c := startServer(t, &Server{Root: root, Command: []string{"sh", "-c", `echo "$0 $1" >> ` + ran}})
	for _, tc := range []struct {
		name string
		f    File
		says string
	}{
		{"owner with a line break", File{Owner: "root\nroot"}, "is not a user here"},
		{"owner with a colon", File{Owner: "root:x:0"}, "is not a user here"},
		{"owner -1", File{Owner: "-1"}, "is not a user here"},
		{"owner 2^32-1", File{Owner: "4294967295"}, "is not a user here"},
		{"group with a line break", File{Group: "root\n"}, "is not a group here"},
		{"unit with a space", File{OnChange: OnChange{Action: OnChangeRestart, Unit: "a b.service"}}, "not a unit name"},
		{"unit an option", File{OnChange: OnChange{Action: OnChangeRestart, Unit: "--now"}}, "not a unit name"},
		{"unit with a semicolon", File{OnChange: OnChange{Action: OnChangeReload, Unit: "a;touch /x"}}, "not a unit name"},
		{"unit with a glob", File{OnChange: OnChange{Action: OnChangeRestart, Unit: "a*.service"}}, "not a unit name"},
		{"action of another word", File{OnChange: OnChange{Action: "stop", Unit: "a.service"}}, "not restart, reload or none"},
		{"path with //", File{Path: "//etc/x"}, "not clean"},
		{"path with /./", File{Path: "/etc/./x"}, "not clean"},
		{"path ending in /", File{Path: "/etc/x/"}, "not clean"},
		{"mode with setgid", File{Mode: "2750"}, "not an octal mode"},
		{"mode sticky", File{Mode: "1644"}, "not an octal mode"},
		{"mode signed", File{Mode: "+644"}, "not an octal mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f.Path == "" {
				tc.f.Path = "/etc/x"
			}
			tc.f.Form, tc.f.Content = FormOwned, []byte("x\n")
			if (tc.f.Owner != "" || tc.f.Group != "") && !canChown() {
				t.Skip("owners are looked up as root only")
			}
			_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
				{Path: "/etc/first", Form: FormOwned, Content: []byte("x\n"), OnChange: OnChange{Action: OnChangeRestart, Unit: "ok.service"}},
				tc.f}})
			wantStatus(t, err, http.StatusBadRequest, tc.says)
			if err != nil && strings.Contains(err.Error(), "x\\n") {
				t.Errorf("content in the error: %v", err)
			}
		})
	}
	mustAbsent(t, filepath.Join(root, "etc"))
	mustAbsent(t, ran)
}
