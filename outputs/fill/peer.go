package fill

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
)

// peerListener notes each connection's peer uid (SO_PEERCRED) as it is
// accepted, for the AllowUIDs check.
type peerListener struct{ net.Listener }

type peerConn struct {
	net.Conn
	uid int  // -1: not known
	ok  bool // the uid could be read
}

func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	uid, ok := peerUID(c)
	return &peerConn{Conn: c, uid: uid, ok: ok}, nil
}

type peerKey struct{}

func withPeer(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*peerConn); ok {
		return context.WithValue(ctx, peerKey{}, pc)
	}
	return ctx
}

// peerCheck answers 403 to a peer whose uid is not in AllowUIDs, or whose
// uid could not be read; nothing of its request is read or written.
func (s *Server) peerCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pc, _ := r.Context().Value(peerKey{}).(*peerConn)
		if pc == nil || !pc.ok || !slices.Contains(s.AllowUIDs, pc.uid) {
			who := "a peer whose uid could not be read"
			if pc != nil && pc.ok {
				who = "peer uid " + strconv.Itoa(pc.uid)
			}
			uid := -1
			if pc != nil {
				uid = pc.uid
			}
			s.Log.Warn().Int("peer_uid", uid).Ints("allowed", s.AllowUIDs).Msg("fill socket: connection refused")
			writeError(w, http.StatusForbidden, fmt.Sprintf("fill socket: %s is not among the allowed uids %v: refused", who, s.AllowUIDs))
			return
		}
		h.ServeHTTP(w, r)
	})
}
