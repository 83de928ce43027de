package fill

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// ownedBy fails the test unless the file at p has the given uid and gid.
func ownedBy(t *testing.T, p string, uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(fi); u != uid || g != gid {
		t.Errorf("%s is owned by %d:%d, want %d:%d", p, u, g, uid, gid)
	}
}

// nobodyIDs is the uid and gid of user nobody (65534 where it has none).
func nobodyIDs() (int, int) {
	uid, gid := 65534, 65534
	if id, ok := lookupID("nobody", false); ok {
		uid = id
		gid = defaultGID(strconv.Itoa(id))
	}
	return uid, gid
}

// TestAnOwnedFileNamingNoOwnerIsNotTheOldFilesOwners: one who may write
// the directory an owned file goes to makes the file before mesh-fill
// does (or replaces it between fills), owned by them and readable by
// all. A request naming no owner, group or mode writes the file as it
// writes a new one: mesh-fill's own user, its owner's primary group (root's
// when no owner is named), mode 0644 — also when the bytes planted are
// already the request's. Before, the file kept the planter's owner and
// group (the request's content, a secret maybe, theirs to read and
// rewrite), and a file planted with the request's bytes was "unchanged".
func TestAnOwnedFileNamingNoOwnerIsNotTheOldFilesOwners(t *testing.T) {
	if !canChown() {
		t.Skip("needs root to give files away and to take them back")
	}
	uid, gid := nobodyIDs()
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, tc := range []struct {
		name, planted, content, mode string
		plantMode, wantMode          os.FileMode
	}{
		{"other bytes", "planted\n", "s3cr3t\n", "", 0o640, DefaultMode},
		{"the request's bytes and mode", "s3cr3t\n", "s3cr3t\n", "", DefaultMode, DefaultMode},
		{"a mode named", "planted\n", "s3cr3t\n", "0600", 0o640, 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(root, "etc/app.conf")
			writeFile(t, p, tc.planted)
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.plantMode); err != nil {
				t.Fatal(err)
			}
			resp := fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/app.conf", Form: FormOwned, Content: []byte(tc.content), Mode: tc.mode}}})
			if got := resp.Files[0].Action; got != ActionWritten {
				t.Errorf("action %s, want written", got)
			}
			mustRead(t, p, tc.content)
			ownedBy(t, p, os.Geteuid(), 0)
			mustMode(t, p, tc.wantMode)
		})
	}

	// a group named alone: the owner is still mesh-fill's, not the old file's
	p := filepath.Join(root, "etc/grouped.conf")
	writeFile(t, p, "planted\n")
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/grouped.conf", Form: FormOwned, Content: []byte("x\n"), Group: strconv.Itoa(gid)}}})
	ownedBy(t, p, os.Geteuid(), gid)

	// an owner named alone: the group is the owner's primary group, not the old file's
	if err := os.Chown(p, 0, 0); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/grouped.conf", Form: FormOwned, Content: []byte("x\n"), Owner: "nobody"}}})
	ownedBy(t, p, uid, gid)
}

// TestAnOwnedFilesModeIsTheRequestsSetIDBitsToo: an owned file holding the
// request's bytes but with a set-user-id, set-group-id or sticky bit the
// request does not name (set by its owner, say) is written again with the
// request's mode alone (written, not unchanged). Before, the mode compared
// was the permission bits only, so such a file stayed set-id for good.
func TestAnOwnedFilesModeIsTheRequestsSetIDBitsToo(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Files: []File{{Path: "/bin/tool", Form: FormOwned, Content: []byte("#!/bin/sh\n"), Mode: "0755"}}}
	fillOK(t, c, req)
	p := filepath.Join(root, "bin/tool")
	for _, bits := range []os.FileMode{os.ModeSetuid, os.ModeSetgid, os.ModeSticky} {
		if err := os.Chmod(p, 0o755|bits); err != nil {
			t.Fatal(err)
		}
		if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
			t.Errorf("mode %v put back: %s, want written", 0o755|bits, got)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0o755 {
			t.Errorf("after the fill the mode is %v, want 0755", fi.Mode())
		}
	}
}

// TestANumericOwnerIsAnIdEvenWithoutAName: an owner or group given as a
// number is that id, as chown takes it, whether or not a user or group of
// that id is listed here (ids of a directory service not reachable, a
// container's): the file is given it, and a group not named is root's
// (the owner has no primary group to read). A name that is no user or
// group here is refused (TestOwnerWhenRoot).
func TestANumericOwnerIsAnIdEvenWithoutAName(t *testing.T) {
	if !canChown() {
		t.Skip("needs root to give files away")
	}
	const uid, gid = 54321, 54322
	if _, ok := lookupID("54321", false); !ok {
		t.Fatal("a number is not taken as an id")
	}
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Files: []File{
		{Path: "/a", Form: FormOwned, Content: []byte("a\n"), Owner: strconv.Itoa(uid), Group: strconv.Itoa(gid)},
		{Path: "/b", Form: FormOwned, Content: []byte("b\n"), Owner: strconv.Itoa(uid)},
	}})
	ownedBy(t, filepath.Join(root, "a"), uid, gid)
	ownedBy(t, filepath.Join(root, "b"), uid, 0)
}
