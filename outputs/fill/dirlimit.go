package fill

import (
	"fmt"
	"maps"
	"path"

	"golang.org/x/sys/unix"
)

// A request keeps every directory it works in open from its plan to its
// end (dirs): what its plan checked and read in a directory is written in
// that very directory. That cannot be given up for fewer descriptors (a
// directory closed after its files are written was still open, with all
// the others, at the end of the plan), so a request naming files in more
// directories than the process may open failed half-way with "too many
// open files" (a 500). Instead a request is refused (400) before anything
// is opened or written when its files, and those a whole request removes,
// are in more directories than it could ever open: the limit less
// fdReserve, less the temp files it holds open (batch) and a few more
// (fdSlack). That is about 524,000 directories with systemd's default
// limit, 19,600 at a limit of 20,000; Serve logs it. The limit is not
// split among --max-requests: a request refused here is refused for good
// (the client waits longer each time before sending it again), so only
// what can never succeed is; requests that together run out of
// descriptors get a 500 and are sent again at the client's next tick.
const (
	fdReserve = 128 // the listener, connections, the log, state and pending files, programs run
	fdSlack   = 16  // a request's transient descriptors: a parent on a walk, a file read, a directory listed
	minDirs   = 16  // the least a request may name, whatever the limit
)

// dirLimitFor is the most directories one request may work in, for an
// open-file limit of nofile.
func dirLimitFor(nofile uint64) int {
	return int(max(int64(min(nofile, 1<<30))-fdReserve-batch-fdSlack, minDirs))
}

// openFileLimit is the process's open-file limit (its soft limit, which
// Go raises to the hard one at start).
func openFileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	return rl.Cur
}

// checkDirs refuses (400) a request whose files, with those it
// removes (drop: where each leads), are in more than s.dirLimit
// directories (0: no limit). A path that locate refuses counts for
// nothing: the plan refuses it.
func (s *Server) checkDirs(files []File, drop map[string]held) error {
	if s.dirLimit <= 0 || len(files)+len(drop) <= s.dirLimit {
		return nil
	}
	in := map[string]bool{}
	for _, f := range files {
		if at, err := s.locate(path.Clean(f.Path)); err == nil {
			in[path.Dir(at)] = true
		}
	}
	named := len(in)
	for at := range maps.Keys(drop) {
		in[path.Dir(at)] = true
	}
	if len(in) <= s.dirLimit {
		return nil
	}
	also := ""
	if len(in) > named {
		also = fmt.Sprintf(" (%d of them for the files it removes)", len(in)-named)
	}
	return refuse("the request has files in %d directories%s; mesh-fill keeps each open for the request's life, and one "+
		"request may have %d (its open-file limit %d, less %d): put the module's files in fewer "+
		"directories, or raise the limit (systemd's LimitNOFILE=)", len(in), also, s.dirLimit, openFileLimit(), fdReserve+batch+fdSlack)
}
