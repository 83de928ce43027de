package fill

import (
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
// (0000-0777) are accepted: set-id and sticky bits are refused.
func parseMode(p, s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, refuse("path %q: mode %q is not an octal mode between 0000 and 0777", p, s)
	}
	return fs.FileMode(v), nil
}

// lookupID resolves a user or group by name, or takes it as a number.
func lookupID(name string, group bool) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		return n, true
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
