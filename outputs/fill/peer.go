package fill

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
)

// PeerListener notes each connection's peer uid (SO_PEERCRED) as it is
// accepted; an http.Server given ConnContext then finds it with PeerUID.
// The fill socket's AllowUIDs and the daemon's control socket use it.
type PeerListener struct{ net.Listener }

type peerConn struct {
	net.Conn
	uid int  // -1: not known
	ok  bool // the uid could be read
}

func (l PeerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	uid, ok := peerUID(c)
	return &peerConn{Conn: c, uid: uid, ok: ok}, nil
}

type peerKey struct{}

// ConnContext is an http.Server's ConnContext that carries the peer noted
// by PeerListener.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if pe, ok := c.(*protoErrConn); ok {
		c = pe.Conn
	}
	if pc, ok := c.(*peerConn); ok {
		return context.WithValue(ctx, peerKey{}, pc)
	}
	return ctx
}

// PeerUID is the uid of the peer of the request whose context this is; ok
// is false when it could not be read (or the listener was not a
// PeerListener).
func PeerUID(ctx context.Context) (uid int, ok bool) {
	pc, _ := ctx.Value(peerKey{}).(*peerConn)
	if pc == nil || !pc.ok {
		return -1, false
	}
	return pc.uid, true
}

// peerCheck answers 403 to a peer whose uid is not in AllowUIDs, or whose
// uid could not be read; nothing of its request is read or written.
func (s *Server) peerCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, ok := PeerUID(r.Context())
		if !ok || !slices.Contains(s.AllowUIDs, uid) {
			s.Log.Warn().Int("peer_uid", uid).Ints("allowed", s.AllowUIDs).Msg("fill socket: connection refused")
			writeError(w, http.StatusForbidden, notAllowed(uid, ok, s.AllowUIDs))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// notAllowed is the 403's text for a peer of uid (ok: it could be read)
// not in allowed.
func notAllowed(uid int, ok bool, allowed []int) string {
	who := "a peer whose uid could not be read"
	if ok {
		who = "peer uid " + strconv.Itoa(uid)
	}
	return fmt.Sprintf("fill socket: %s is not among the allowed uids %v: refused", who, allowed)
}
