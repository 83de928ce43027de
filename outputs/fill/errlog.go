package fill

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// httpErrorLog is a standard logger whose every message is one warning of
// l naming the socket, for http.Server's ErrorLog: what net/http says of
// a connection (an accept error, such as running out of file descriptors;
// a handler's panic, its stack in the one message) would otherwise go to
// the standard logger, plain text on stderr between mesh-fill's JSON
// lines, where a log shipper reading JSON drops it.
func httpErrorLog(l zerolog.Logger, socket string) *log.Logger {
	return log.New(warnWriter{l: l, socket: socket}, "", 0)
}

type warnWriter struct {
	l      zerolog.Logger
	socket string
}

func (w warnWriter) Write(p []byte) (int, error) {
	w.l.Warn().Str("socket", w.socket).Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
