//go:build linux

package fill

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// posixACL is a POSIX ACL in the kernel's xattr form (version 2, then
// each entry's tag, permissions and id, in the order the kernel wants).
func posixACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclUndef    = 0xffffffff
)

// TestAFileCarriesItsModeAloneWhateverTheDirectorysDefaultACL: a
// directory with a default ACL (setfacl -d) passes it to the files made in
// it, so a file mesh-fill wrote 0640 could be read by the users and groups
// the ACL names, who are not its group, and a secret's 0600 carried their
// entries too (an ACL's mask, opened by a later chmod g+r, opens them). A
// file mesh-fill writes, in that directory or in one it makes below it,
// carries no ACL of its own: the mode ls shows, the one declared, is all
// there is.
func TestAFileCarriesItsModeAloneWhateverTheDirectorysDefaultACL(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := posixACL(
		[3]uint32{aclUserObj, 7, aclUndef},
		[3]uint32{aclUser, 6, 12345},
		[3]uint32{aclGroupObj, 5, aclUndef},
		[3]uint32{aclGroup, 4, 12346},
		[3]uint32{aclMask, 7, aclUndef},
		[3]uint32{aclOther, 4, aclUndef},
	)
	if err := unix.Setxattr(dir, "system.posix_acl_default", def, 0); err != nil {
		t.Skipf("the filesystem of %s takes no default ACL (%v): nothing to test here", dir, err)
	}
	// made in it, a file takes the ACL (the case this test is about)
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !hasACL(t, probe) {
		t.Skipf("a file made below a default ACL carries none here: nothing to test")
	}
	os.Remove(probe)

	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Files: []File{
		{Path: "/etc/app/api-key", Form: FormOwned, Content: []byte("s3cr3t\n"), Mode: "0600"},
		{Path: "/etc/app/app.conf", Form: FormOwned, Content: []byte("a=1\n"), Mode: "0640"},
		{Path: "/etc/app/keys.env", Form: FormManagedKeys, Content: []byte("K=v\n")},
		{Path: "/etc/app/seed.conf", Form: FormSeed, Content: []byte("seed\n")},
		{Path: "/etc/app/sub/deep.conf", Form: FormOwned, Content: []byte("d\n"), Mode: "0640"},
	}})
	for p, mode := range map[string]fs.FileMode{"api-key": 0o600, "app.conf": 0o640, "keys.env": 0o644, "seed.conf": 0o644, "sub/deep.conf": 0o640} {
		p := filepath.Join(dir, p)
		mustMode(t, p, mode)
		if hasACL(t, p) {
			t.Errorf("%s carries an ACL (inherited from its directory's default ACL)", p)
		}
	}
}

// hasACL says whether the file at p carries an access ACL.
func hasACL(t *testing.T, p string) bool {
	t.Helper()
	_, err := unix.Getxattr(p, "system.posix_acl_access", nil)
	if errors.Is(err, unix.ENODATA) {
		return false
	}
	if err != nil {
		t.Fatalf("%s: reading its ACL: %v", p, err)
	}
	return true
}

// TestAnOwnedFileCarryingAnACLIsWrittenAgain: an owned file found with
// the request's bytes and mode but carrying an access ACL (an earlier
// mesh-fill's file that took its directory's default ACL, or one planted
// with setfacl) is written again, without it, and answered written, as
// one holding a set-id bit is: the request says all the file is. Its
// next fill finds it unchanged. A managed file's ACL, its owner's
// setting, is left while its text is unchanged.
func TestAnOwnedFileCarryingAnACLIsWrittenAgain(t *testing.T) {
	root := t.TempDir()
	owned, managed := filepath.Join(root, "etc/app.conf"), filepath.Join(root, "etc/keys.env")
	writeFile(t, owned, "a=1\n")
	writeFile(t, managed, "K=v\n")
	acl := posixACL(
		[3]uint32{aclUserObj, 6, aclUndef},
		[3]uint32{aclUser, 4, 12345},
		[3]uint32{aclGroupObj, 4, aclUndef},
		[3]uint32{aclMask, 4, aclUndef},
		[3]uint32{aclOther, 0, aclUndef},
	)
	for _, p := range []string{owned, managed} {
		if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
			t.Skipf("the filesystem of %s takes no ACL (%v): nothing to test here", p, err)
		}
		mustMode(t, p, 0o640) // the mask is the group's bits
	}
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Files: []File{
		{Path: "/etc/app.conf", Form: FormOwned, Content: []byte("a=1\n"), Mode: "0640"},
		{Path: "/etc/keys.env", Form: FormManagedKeys, Content: []byte("K=v\n"), Mode: "0640"},
	}}
	resp := fillOK(t, c, req)
	if resp.Files[0].Action != ActionWritten || resp.Files[1].Action != ActionUnchanged {
		t.Errorf("answer %+v, want the owned file written and the managed one unchanged", resp.Files)
	}
	if hasACL(t, owned) {
		t.Errorf("%s still carries its ACL", owned)
	}
	mustMode(t, owned, 0o640)
	mustRead(t, owned, "a=1\n")
	if !hasACL(t, managed) {
		t.Errorf("%s lost its ACL, its text unchanged", managed)
	}
	if resp := fillOK(t, c, req); resp.Files[0].Action != ActionUnchanged {
		t.Errorf("the next fill: %+v, want the owned file unchanged", resp.Files)
	}
}
