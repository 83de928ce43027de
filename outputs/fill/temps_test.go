package fill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plant writes a file of root as a mesh-fill killed mid-request, or a
// user, would have left it.
func plant(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	writeFile(t, p, content)
	return p
}

// mustStay fails unless the file at p still holds want.
func mustStay(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Errorf("%s: %q, %v; want it left holding %q", p, b, err, want)
	}
}

// TestAWholeRequestRemovesItsStaleTempFiles: temp files left beside a
// module's files (by a mesh-fill killed mid-request; a secret's holds the
// secret) are removed by the module's next whole request, and said; a
// user's dot files, a name like a temp file's but not one, a symlink so
// named, and the temp files of another file (a long name alike in its
// first 240 bytes included) are left.
func TestAWholeRequestRemovesItsStaleTempFiles(t *testing.T) {
	root := t.TempDir()
	log := newLog(t)
	c, _ := runUntilStopped(t, &Server{Root: root}, log)
	long := strings.Repeat("n", 250)
	otherLong := strings.Repeat("n", 240) + strings.Repeat("o", 10)
	whole := Request{Module: "a", Whole: true, Files: []File{
		{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/" + long, Form: FormOwned, Content: []byte("long\n")},
	}}
	fillOK(t, c, whole)

	stale := []string{
		plant(t, root, "etc/"+tempName("a.conf"), "s3cr3t\n"),
		plant(t, root, "etc/"+tempName(long), "s3cr3t\n"),
	}
	if n := len(filepath.Base(stale[1])); n > maxName {
		t.Fatalf("a temp file name of %d bytes", n)
	}
	kept := map[string]string{}
	for rel, content := range map[string]string{
		".a.conf":                        "user\n",
		".a.conf.bak":                    "user\n",
		".a.conf" + tempMark + "notours": "user\n",
		tempName("b.conf"):               "b's, being written\n",
		tempName(otherLong):              "another's\n",
	} {
		kept[plant(t, root, "etc/"+rel, content)] = content
	}
	outside := plant(t, t.TempDir(), "target", "not mesh-fill's\n")
	link := filepath.Join(root, "etc", tempName("a.conf"))
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	fillOK(t, c, Request{Module: "a", Files: whole.Files[:1]}) // not whole: sweeps nothing
	mustStay(t, stale[0], "s3cr3t\n")
	fillOK(t, c, whole)
	for _, p := range stale {
		mustAbsent(t, p)
		if want := "/etc/" + filepath.Base(p); !strings.Contains(log.String(), `"path":"`+want+`","message":"stale temp file removed`) {
			t.Errorf("removal of %s not said; log:\n%s", want, log.String())
		}
	}
	for p, content := range kept {
		mustStay(t, p, content)
	}
	if target, err := os.Readlink(link); err != nil || target != outside {
		t.Errorf("the symlink: %q %v", target, err)
	}
	mustStay(t, outside, "not mesh-fill's\n")
	if strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("a temp file's content in the log:\n%s", log.String())
	}
}

// TestAStartAndADeleteRemoveStaleTempFiles: a mesh-fill started on a
// state dir removes the temp files beside every path it holds before it
// serves, and a DELETE of a module those beside its files; a user's dot
// file stays.
func TestAStartAndADeleteRemoveStaleTempFiles(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/app/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
	stop()
	stale := plant(t, root, "etc/app/"+tempName("a.conf"), "s3cr3t\n")
	user := plant(t, root, "etc/app/.hidden", "user\n")

	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	mustAbsent(t, stale)
	mustStay(t, user, "user\n")

	stale = plant(t, root, "etc/app/"+tempName("a.conf"), "s3cr3t\n")
	if _, err := c.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, stale)
	mustAbsent(t, filepath.Join(root, "etc/app/a.conf"))
	mustStay(t, user, "user\n")
}
