//go:build !linux

package fill

import "os"

// dropACL: the POSIX ACLs a directory passes on are Linux's here
// (acl_linux.go); elsewhere a file keeps what it was made with.
func dropACL(*os.File) error { return nil }

// carriesACL: see dropACL.
func carriesACL(*os.File) bool { return false }
