package fill

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// headerTimeout bounds reading a request's head (http.Server's
// ReadHeaderTimeout), and bodyStall the wait for each next part of its
// body: the client writes a request whole at once (conn.roundTrip), so a
// body that stops coming for that long is a peer gone or stuck. bodyStall
// is a variable for a test to make it short.
const headerTimeout = 10 * time.Second

var bodyStall = headerTimeout

// bodyBlock is the most room a body is read into at once: the room is
// taken a block at a time as bytes come (no more than the length said), so
// a peer that says a large length and sends little is given little (all
// MaxConns such hold 64 MiB, far below bodyBudget), and none is copied
// again as the body grows.
const bodyBlock = 1 << 20

// errBodiesFull is readBody's error for a body that would take the bodies
// held past bodyBudget.
var errBodiesFull = errors.New("bodies held full")

// bodyBudget is how many bytes of request bodies the server holds at once
// (read, or being read, and not yet decoded): as many as MaxRequests
// bodies of MaxBody, the bound the slots kept when a body was read only
// once its request had one.
func (s *Server) bodyBudget() int64 {
	if s.bodyBytesMax > 0 {
		return s.bodyBytesMax
	}
	return int64(s.maxRequests()) * MaxBody
}

// readBody reads a fill's body whole before its request takes a slot
// (admit), at most MaxBody bytes (a *http.MaxBytesError past it), each
// part within bodyStall of the one before (a timeout error otherwise) and
// all within the read timeout, and returns a reader of it. Read once a
// slot was taken, a peer that sent its body a byte at a time held the
// slot for the whole read timeout (2 minutes): eight such held every fill
// of the node that long. The room held is counted against bodyBudget as
// it is taken (errBodiesFull past it, nothing kept); release gives it
// back, once the body is decoded. Read whole, the connection is left with
// no read deadline (net/http's watch for the client going reads it: a
// deadline passed while the request waits for a slot or runs would end
// that watch as if the client had gone, and every later request on the
// connection with it; admit's own timer bounds the wait for a slot);
// not read whole, the deadline is passed (net/http would wait as long to
// read the rest of a short one).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body io.Reader, release func(), err error) {
	rc := http.NewResponseController(w)
	timeout := orDefault(s.ReadTimeout, DefaultReadTimeout)
	end := time.Now().Add(timeout)
	stall := min(timeout, bodyStall)
	defer func() {
		at := time.Now() // not read whole: the rest is not waited for, the connection closed after the answer
		if err == nil {
			at = time.Time{} // read whole: none (above)
		}
		_ = rc.SetReadDeadline(at)
	}()

	var blocks [][]byte
	var held int64
	release = func() {
		for _, b := range blocks {
			clear(b) // the files, secrets included, are kept nowhere
		}
		blocks = nil
		s.bodyBytes.Add(-held)
		held = 0
	}
	in := http.MaxBytesReader(w, r.Body, MaxBody)
	var read int64
	for {
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == cap(blocks[len(blocks)-1]) {
			room := int64(bodyBlock)
			if left := r.ContentLength - read; r.ContentLength >= 0 && left < room {
				room = max(left, 1) // its last bytes come with io.EOF; 1 to read the end of none
			}
			if s.bodyBytes.Add(room) > s.bodyBudget() {
				s.bodyBytes.Add(-room)
				release()
				return nil, nil, errBodiesFull
			}
			held += room
			blocks = append(blocks, make([]byte, 0, room))
		}
		next := time.Now().Add(stall)
		if next.After(end) {
			next = end
		}
		_ = rc.SetReadDeadline(next)
		b := blocks[len(blocks)-1]
		n, err := in.Read(b[len(b):cap(b)])
		blocks[len(blocks)-1] = b[:len(b)+n]
		read += int64(n)
		if err == io.EOF {
			rs := make([]io.Reader, len(blocks))
			for i, b := range blocks {
				rs[i] = bytes.NewReader(b)
			}
			return io.MultiReader(rs...), release, nil
		}
		if err != nil {
			release()
			return nil, nil, err
		}
	}
}

// answerBody answers a body readBody did not read whole.
func (s *Server) answerBody(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
	case errors.Is(err, errBodiesFull):
		s.Log.Warn().Int64("body_bytes", s.bodyBytes.Load()).Int("max_requests", s.maxRequests()).
			Msg("request refused: the bodies held are as many bytes as --max-requests bodies may be; answered 503")
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("mesh-fill holds %d bytes of request bodies, as many as %d requests (its --max-requests) may send; send it again",
			s.bodyBytes.Load(), s.maxRequests()))
	default:
		// the peer stopped sending (bodyStall), or went: it is closed
		s.Log.Warn().Err(err).Msg("request body not read whole: the peer stopped sending it, or went")
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not read whole: %v", err))
	}
}
