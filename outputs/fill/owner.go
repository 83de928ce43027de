package fill

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// DefaultMode is the mode of an owned or seed file whose request names none.
const DefaultMode fs.FileMode = 0o644

// canChown says whether this process may give files away: only root may.
// A variable so a test can pretend otherwise.
var canChown = func() bool { return os.Geteuid() == 0 }

// parseMode reads an octal mode such as "0640". Only permission bits
// (0000-0777) are accepted: set-id and sticky bits are refused. So is a
// mode others may write (0666, 0777, 0602): mesh-fill writes, as root,
// files programs trust, and any local user could rewrite such a file
// until the next refill put it back. A group may write (0664): the group
// is the request's to name.
func parseMode(p, s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, refuse("path %q: mode %q is not an octal mode between 0000 and 0777", p, s)
	}
	if v&0o002 != 0 {
		return 0, refuse("path %q: mode %q lets others write the file (any local user); mesh-fill writes no such file", p, s)
	}
	return fs.FileMode(v), nil
}

// lookupID resolves a user or group by name, or takes it as a number.
func lookupID(name string, group bool) (int, bool) {
	// a number is an id: one a uid_t holds, not (uid_t)-1, which chown
	// reads as "leave it" (4294967296 was taken, and chown truncated it
	// to 0: root's); no sign either
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return int(n), n != 1<<32-1
	} else if _, err := strconv.ParseInt(name, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return 0, false // a signed number, or one out of range
	}
	var id string
	if group {
		g, err := user.LookupGroup(name)
		if err != nil {
			return 0, false
		}
		id = g.Gid
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return 0, false
		}
		id = u.Uid
	}
	n, err := strconv.Atoi(id)
	return n, err == nil
}

// links is how many names an existing file has (1 when it cannot be told).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// ownerOf gives the uid and gid of an existing file, or -1s.
func ownerOf(fi fs.FileInfo) (uid, gid int) {
	if fi == nil {
		return -1, -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// defaultGID is the group of a file made for a request that names none:
// the named owner's primary group, or root's (0) when no owner is named
// or its group cannot be read. Left to the kernel, it would be this
// process's group: the example unit runs mesh-fill with Group=mesh-fill,
// the group it shares its socket with the client through, so a file meant
// for its owner's eyes (0640) was readable by every member of that group.
func defaultGID(owner string) int {
	if owner == "" {
		return 0
	}
	lookup := user.Lookup
	if _, err := strconv.Atoi(owner); err == nil {
		lookup = user.LookupId // a uid, as lookupID takes it
	}
	u, err := lookup(owner)
	if err != nil {
		return 0
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return 0
	}
	return gid
}

// ownNew is the owner and group of a file written whole for a request
// naming neither (when root): this process's user, and defaultGID's group.
// A named owner or group replaces them (planFiles).
func ownNew(owner string) (uid, gid int) {
	return os.Geteuid(), defaultGID(owner)
}
