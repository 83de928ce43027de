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
// are in more directories than its share of the open-file limit: the
// limit less fdReserve, split among MaxRequests requests at once, less the
// temp files one holds open (batch) and a few more (fdSlack). With
// systemd's default limit (524,288) and 8 requests, that is about 65,000
// directories; Serve logs it. A DELETE is not refused: it removes the
// module's files a share of directories at a time (removeModule).
const (
	fdReserve = 128 // the listener, connections, the log, state and pending files, programs run
	fdSlack   = 16  // a request's transient descriptors: a parent on a walk, a file read, a directory listed
	minDirs   = 16  // the least a request may name, whatever the limit
)

// dirLimitFor is the most directories one request may work in, for an
// open-file limit of nofile shared by maxRequests requests.
func dirLimitFor(nofile uint64, maxRequests int) int {
	share := (int64(min(nofile, 1<<30)) - fdReserve) / int64(maxRequests)
	return int(max(share-batch-fdSlack, minDirs))
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
		"request may have %d (its open-file limit %d, less %d, shared by --max-requests %d): put the module's files in fewer "+
		"directories, or raise the limit (systemd's LimitNOFILE=)", len(in), also, s.dirLimit, openFileLimit(), fdReserve, s.maxRequests())
}
