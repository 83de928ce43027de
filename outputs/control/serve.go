package control

import (
	"context"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Serve answers h on the control socket at path, bound by Listen, to peers
// of this process's uid or root only: the socket's mode keeps other users
// out, and this holds when the mode was widened by hand. refused, if set,
// hears each peer turned away; errLog, if set, hears what net/http says of
// a connection (a handler's panic, an accept error), which would otherwise
// go to the standard logger, plain text on stderr (ErrorLog makes one of
// the daemon's log). stop shuts the server down and removes path.
func Serve(path string, h http.Handler, refused func(uid int, urlPath string), errLog *log.Logger) (stop func(), err error) {
	ln, err := Listen(path)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           peerCheck(h, refused),
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext:       fill.ConnContext,
		ErrorLog:          errLog,
	}
	go func() { _ = srv.Serve(fill.PeerListener{Listener: ln}) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(path)
	}, nil
}

// peerCheck refuses a peer whose uid is neither this process's nor root's.
func peerCheck(h http.Handler, refused func(uid int, urlPath string)) http.Handler {
	self := os.Getuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, ok := fill.PeerUID(r.Context())
		if ok && (uid == self || uid == 0) {
			h.ServeHTTP(w, r)
			return
		}
		who := "a peer whose uid could not be read"
		if ok {
			who = "uid " + strconv.Itoa(uid)
		}
		if refused != nil {
			refused(uid, r.URL.Path)
		}
		WriteJSON(w, http.StatusForbidden, ErrorBody{Error: "control socket: " + who +
			" is neither the daemon's uid (" + strconv.Itoa(self) + ") nor root: refused"})
	})
}

// ErrorLog is a standard logger whose every message is one warning of l
// (a stack trace included, as one field), for http.Server's ErrorLog.
func ErrorLog(l zerolog.Logger) *log.Logger { return ErrorLogOf(l, "control socket") }

// ErrorLogOf is ErrorLog for another HTTP server than the control socket:
// each warning names component (e.g. "metrics").
func ErrorLogOf(l zerolog.Logger, component string) *log.Logger {
	return log.New(warnWriter{l, component}, "", 0)
}

type warnWriter struct {
	l         zerolog.Logger
	component string
}

func (w warnWriter) Write(p []byte) (int, error) {
	w.l.Warn().Str("component", w.component).Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
