package fill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

// A change is one small request: over a connection of its own (a dial, a
// transport and its two goroutines, a close) that cost more of the
// client's CPU than the rest of the change (issue 20). A conn is one kept
// connection to the fill socket: the goroutine that sends a request writes
// it and reads its answer itself, in HTTP/1.1 (net/http parses the answer),
// and the connection serves the next request once the answer is read.
type conn struct {
	nc      net.Conn
	br      *bufio.Reader
	body    bytes.Buffer // the request's JSON; cleared once sent, as it may carry a secret
	enc     *json.Encoder
	hdr     []byte
	raw     []byte // the answer's body, reused
	closing bool   // the server closes it after this answer: not kept
	budget  budget // under br: what one answer may still read
}

// budget is the reader under a conn's bufio.Reader: it reads at most n
// bytes more, then fails. net/http bounds nothing of an answer's status
// line and headers: a node-engine sending one header without end took the
// client to 1 GB (an outside audit).
type budget struct {
	r    io.Reader
	n    int64
	over bool // a read was cut by the budget
}

var errOverBudget = errors.New("over the answer's byte budget")

func (b *budget) Read(p []byte) (int, error) {
	if b.n <= 0 {
		b.over = true
		return 0, errOverBudget
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

// errNoAnswer is what a request that got nothing of an answer is (test
// with errors.Is): on a kept connection, it is sent again over a new one.
var errNoAnswer = errors.New("no answer")

// noAnswerError is errNoAnswer with its cause (the dial's "no such file or
// directory", "connection refused", a reset). It unwraps to the cause alone,
// so errors.Unwrap gives the reason the operator is told, and errors.Is
// still finds errNoAnswer through Is (a "%w: %w" error unwraps to a list,
// which errors.Unwrap reads as nil: every reason read "%!w(<nil>)").
type noAnswerError struct{ cause error }

func (e *noAnswerError) Error() string        { return errNoAnswer.Error() + ": " + e.cause.Error() }
func (e *noAnswerError) Unwrap() error        { return e.cause }
func (e *noAnswerError) Is(target error) bool { return target == errNoAnswer }

// errTimedOut: the request's deadline (Client.Timeout) passed.
var errTimedOut = errors.New("timed out")

// headRoom is the room before a request's body for its head: the request
// line and three headers.
var headRoom [256]byte

// keptBody is the most room a conn keeps for the next request's body: a
// change's request is a few KB, a whole module's (cold start, refill) may
// be hundreds, and eight conns holding their largest was ~200 bytes a file
// at 10k files (issue 20).
const keptBody = 32 << 10

// maxAnswer bounds an answer's body (a module's files' results).
const maxAnswer = 16 << 20

// maxHead bounds an answer's status lines and headers (those of the
// informational answers before it included), as net/http's
// DefaultMaxHeaderBytes bounds a request's; the body's chunk lines and
// trailers get as much again.
const maxHead = 1 << 20

// maxInformational bounds the informational (1xx) answers skipped before
// a request's own.
const maxInformational = 5

func dial(ctx context.Context, sock string, deadline time.Time, wrap func(net.Conn) net.Conn) (*conn, error) {
	d := net.Dialer{Deadline: deadline}
	nc, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, noAnswer(notASocket(sock, err))
	}
	if wrap != nil {
		nc = wrap(nc)
	}
	cn := &conn{nc: nc}
	cn.budget.r = nc
	cn.br = bufio.NewReaderSize(&cn.budget, 16<<10)
	cn.enc = json.NewEncoder(&cn.body)
	return cn, nil
}

// notASocket adds to a refused dial what is at sock when it is no socket
// (a regular file, a directory): the kernel's "connection refused" alone
// reads as mesh-fill being down.
func notASocket(sock string, err error) error {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return err
	}
	fi, serr := os.Stat(sock) // through a symlink, as the dial went
	if serr != nil || fi.Mode()&os.ModeSocket != 0 {
		return err
	}
	what := "a file"
	if fi.IsDir() {
		what = "a directory"
	}
	return fmt.Errorf("%w (%s is there, not a socket: name mesh-fill's --socket)", err, what)
}

func (cn *conn) close() { cn.nc.Close() }

// noAnswer marks err as met before any answer came.
func noAnswer(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimedOut
	}
	return &noAnswerError{cause: err}
}

// roundTrip sends one request (req nil: none has a body) and reads its
// answer: its status and body (raw is the conn's, valid until its next
// request). ctx ending cuts it off.
func (cn *conn) roundTrip(ctx context.Context, deadline time.Time, method, route string, req *Request) (status int, raw []byte, err error) {
	cn.nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { cn.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	defer func() {
		clear(cn.body.Bytes()) // the request's files, secrets included, are kept nowhere
		cn.body.Reset()
		if cn.body.Cap() > keptBody { // a whole module's request: not kept between requests
			cn.body = bytes.Buffer{}
		}
	}()
	// The head goes right before the body, in the room left for it, so
	// the request is one write (one buffer: the race detector sees a
	// write's bytes as read by the server, which it does not for writev).
	cn.body.Write(headRoom[:])
	cn.hdr = append(append(append(cn.hdr[:0], method...), ' '), route...)
	cn.hdr = append(cn.hdr, " HTTP/1.1\r\nHost: fill\r\n"...)
	if req != nil {
		if err := cn.enc.Encode(req); err != nil {
			return 0, nil, fmt.Errorf("encoding the request of module %q: %w", req.Module, err)
		}
		cn.hdr = append(cn.hdr, "Content-Type: application/json\r\nContent-Length: "...)
		cn.hdr = strconv.AppendInt(cn.hdr, int64(cn.body.Len()-len(headRoom)), 10)
		cn.hdr = append(cn.hdr, "\r\n"...)
	}
	cn.hdr = append(cn.hdr, "\r\n"...)
	cn.budget.n = maxHead // the answer's heads; a conn kept has read all it was sent
	if err := cn.write(); err != nil {
		// A server that answered and closed without reading the request
		// (mesh-fill's 503 over its --max-conns) left its answer to be
		// read: it says more than the broken pipe. The peer is gone, so
		// the read does not wait.
		if !errors.Is(err, syscall.EPIPE) {
			return 0, nil, noAnswer(err)
		}
		if _, perr := cn.br.Peek(1); perr != nil {
			return 0, nil, noAnswer(err)
		}
		cn.closing = true
	} else if _, err := cn.br.Peek(1); err != nil {
		return 0, nil, noAnswer(err)
	}
	resp, err := cn.readHead()
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	cn.budget.n += maxAnswer + maxHead // the body, its chunk lines and trailers
	raw, err = cn.readBody(resp)
	if cn.budget.over {
		err = errAnswerOver
	}
	if err != nil {
		return 0, nil, readError(err)
	}
	// Bytes after the answer are none of the next request's: a
	// connection holding some is one answer behind.
	cn.closing = cn.closing || resp.Close || cn.br.Buffered() > 0
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The node-engine's error text may quote a file: the caller
		// copies what it keeps, and the conn does not hold on to it.
		raw = bytes.Clone(raw)
		clear(cn.raw)
	}
	return resp.StatusCode, raw, nil
}

// write sends the head (cn.hdr) and the body (cn.body after headRoom).
func (cn *conn) write() error {
	out := cn.body.Bytes()
	if len(cn.hdr) > len(headRoom) { // a DELETE of a module whose name escapes long
		if _, err := cn.nc.Write(cn.hdr); err != nil {
			return err
		}
		_, err := cn.nc.Write(out[len(headRoom):])
		return err
	}
	out = out[len(headRoom)-len(cn.hdr):]
	copy(out, cn.hdr)
	_, err := cn.nc.Write(out)
	return err
}

// errAnswerOver is the error of a 2xx answer whose body, or the whole
// answer, is over what the client reads.
var errAnswerOver = fmt.Errorf("the node-engine's answer is over the %d MiB limit", maxAnswer>>20)

// readHead reads the status line and headers of the request's answer,
// skipping informational (1xx) ones before it as Go's Transport does:
// taken as the answer, a 100 Continue left the real one to be read as the
// next request's, and the kept connection was one answer behind for every
// request after (an outside audit). A 101 is no answer here.
func (cn *conn) readHead() (*http.Response, error) {
	for i := 0; ; i++ {
		resp, err := http.ReadResponse(cn.br, nil)
		if cn.budget.over {
			return nil, fmt.Errorf("reading the answer: the node-engine's answer headers are over %d MiB", maxHead>>20)
		}
		if err != nil {
			return nil, readError(err)
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, fmt.Errorf("reading the answer: the node-engine answered %s, which is no answer to a fill", resp.Status)
		case resp.StatusCode >= 200:
			return resp, nil
		case i >= maxInformational:
			return nil, fmt.Errorf("reading the answer: the node-engine sent more than %d informational answers (the last %s)", maxInformational, resp.Status)
		}
	}
}

// readBody reads an answer's body whole into the conn's buffer; one
// longer than maxAnswer fails a 2xx (its JSON cut short read as "unexpected
// end of JSON input"), and another's is cut there (it is an error's text);
// the connection is not kept.
func (cn *conn) readBody(resp *http.Response) ([]byte, error) {
	b := cn.raw[:0]
	if n := resp.ContentLength; n > 0 && n <= maxAnswer && int64(cap(b)) < n {
		b = make([]byte, 0, n)
	}
	lr := io.LimitedReader{R: resp.Body, N: maxAnswer + 1}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	cn.raw = b
	if lr.N == 0 {
		cn.closing = true // more may follow: the connection is not at a request's start
		if resp.StatusCode <= 299 {
			return nil, errAnswerOver
		}
		b = b[:maxAnswer]
	}
	return b, nil
}

func readError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimedOut
	}
	return fmt.Errorf("reading the answer: %w", err)
}
