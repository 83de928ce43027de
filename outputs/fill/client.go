package fill

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// DefaultSocket is where the node-engine's fill socket listens unless told.
const DefaultSocket = "/run/nox-mesh-host/fill.sock"

// DefaultTimeout bounds one fill request when Client.Timeout is zero. It
// is longer than mesh-fill itself may take to answer a request of one
// program: a wait for one of its request slots (at most its read
// timeout, then a 503 naming why) and the program's restart or reload (at
// most ProgramTimeout, then a 500 naming why), with a minute to spare. A
// shorter bound gave up on a request mesh-fill was still serving (a unit
// slow to stop: systemd waits 90 s by default), so the module was said
// failed, "not answering", while its restart went on, and mesh-fill's
// answer, or its own reason, was never heard.
const DefaultTimeout = DefaultReadTimeout + ProgramTimeout + time.Minute

// Client sends fill requests to a fill socket (the daemon side). Safe for
// concurrent use: each request in flight has a connection of its own, and
// a connection whose request is answered is kept for the next one (conn.go).
type Client struct {
	// Socket is the unix socket path; DefaultSocket when empty.
	Socket string
	// Timeout bounds one request; DefaultTimeout when zero.
	Timeout time.Duration
	// Wrap, when set, is given each new connection to the socket and
	// returns the one the client uses (the daemon's reads and writes it
	// with raw system calls: cmd/internal/quietconn).
	Wrap func(net.Conn) net.Conn

	mu   sync.Mutex
	idle []*conn // kept connections, none in use
}

func (c *Client) socket() string {
	if c.Socket == "" {
		return DefaultSocket
	}
	return c.Socket
}

// StatusError is a non-2xx answer of the fill socket: Status is the HTTP
// status (400 a request out of shape, 403 a path or unit outside the
// allow-lists, 409 a path or key another module holds, 500 a failure) and
// Msg the server's error text (at most 512 bytes): untrusted, it may quote
// the content of a file it was sent, a secret's included, so a caller that
// knows the request carried a secret repeats Socket and Status alone. Test
// with errors.As.
type StatusError struct {
	Socket string
	Status int
	Msg    string
	Held   string // a 409's path another module's declaration holds, when the node-engine says which
	Holder string // the module holding Held, when the node-engine says which
	// HeldKey, when set, is the managed-keys key of Held that Holder
	// manages: Held itself is shared, not Holder's alone.
	HeldKey string
	// ProgramFailed: a 5xx the node-engine says came once the request
	// was carried out (its files in place), from a restart or reload it
	// ran, still owed (errorBody.ProgramFailed).
	ProgramFailed bool
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("fill socket %s: %d %s: %s", e.Socket, e.Status, http.StatusText(e.Status), e.Msg)
}

// ErrTooLarge is wrapped by the error of a request Fill did not send, its
// body over MaxBody: the same request is as large at every try.
var ErrTooLarge = errors.New("not sent")

// Fill sends one module's files in one request and returns what the
// node-engine did. A socket that does not answer gives an error saying so; a
// non-2xx answer gives a *StatusError carrying the server's error text, which
// is the node-engine's and may quote a file (see StatusError). The client
// puts no file content in an error itself.
func (c *Client) Fill(ctx context.Context, req Request) (Response, error) {
	var out Response
	// A body mesh-fill would cut at MaxBody is not sent: it would only
	// come back as a broken pipe ("not answering"), which names nothing.
	size := 64 + len(req.Module)
	for _, f := range req.Files {
		size += base64.StdEncoding.EncodedLen(len(f.Content)) + len(f.Path) + len(f.Owner) + len(f.Group) + len(f.OnChange.Unit) + 128
	}
	if size > MaxBody {
		return out, fmt.Errorf("fill socket %s: the request of module %s is about %d bytes, over the fill socket's request limit of %d bytes (a module's files together at most about 64 MiB): %w",
			c.socket(), req.Module, size, MaxBody, ErrTooLarge)
	}
	req = listsNotNull(req)
	err := c.do(ctx, http.MethodPost, FillPath, &req, &out)
	if err == nil {
		err = checkAnswer(c.socket(), req, out) // a 200 that says what it should (answercheck.go)
	}
	return out, err
}

// listsNotNull is req with its files an empty list rather than none, and
// each file's content empty text rather than none: SPEC §4.3 writes
// `files` as a list and `content` as base64 text, and JSON's null is
// neither (a node-engine decoding into a list or a string refuses it). The
// caller's files are not changed.
func listsNotNull(req Request) Request {
	if req.Files == nil {
		req.Files = []File{}
		return req
	}
	for i := range req.Files {
		if req.Files[i].Content == nil {
			files := slices.Clone(req.Files)
			for j := i; j < len(files); j++ {
				if files[j].Content == nil {
					files[j].Content = []byte{}
				}
			}
			req.Files = files
			break
		}
	}
	return req
}

// Delete asks the node-engine to remove every file of module, as a whole
// request naming none would (the module left the node, SPEC §4.7), and
// returns the files removed. A module the node-engine holds nothing of is
// no error: it answers no files.
func (c *Client) Delete(ctx context.Context, module string) ([]FileResult, error) {
	var out DeleteResponse
	err := c.do(ctx, http.MethodDelete, ModulesPath+url.PathEscape(module), nil, &out)
	return out.Files, err
}

// CloseIdle closes the connections kept for the next requests (a request
// after it dials again).
func (c *Client) CloseIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		cn.close()
	}
}

// do sends one request (req nil: no body) and decodes a 2xx answer into
// out. It goes over a kept connection when there is one; when that fails
// before any answer came (the node-engine restarted since, and the kept
// connection is dead), it is sent once more over a new one: a fill names
// the whole content of its files, so sending it twice does what sending it
// once does.
func (c *Client) do(ctx context.Context, method, route string, req *Request, out any) error {
	sock := c.socket()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	cn := c.take()
	if cn != nil {
		status, raw, err := cn.roundTrip(ctx, deadline, method, route, req)
		if err == nil {
			err = answer(sock, status, raw, out) // before the next request reuses raw
			c.keepAfter(cn, err)
			return err
		}
		cn.close()
		if !errors.Is(err, errNoAnswer) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return requestError(ctx, sock, timeout, err)
		}
	}
	cn, err := dial(ctx, sock, deadline, c.Wrap)
	if err != nil {
		return requestError(ctx, sock, timeout, err)
	}
	status, raw, err := cn.roundTrip(ctx, deadline, method, route, req)
	if err != nil {
		cn.close()
		return requestError(ctx, sock, timeout, err)
	}
	err = answer(sock, status, raw, out)
	c.keepAfter(cn, err)
	return err
}

// keepAfter keeps cn after a request answered, unless the answer was not
// what the protocol says (a 2xx whose body is not the answer's JSON): a
// node-engine whose connection went wrong (an empty 200 for each request
// on it) is not asked on it again, where every later request, a refill
// every minute, got the same (an outside audit).
func (c *Client) keepAfter(cn *conn, err error) {
	if _, refused := errors.AsType[*StatusError](err); err != nil && !refused {
		cn.close()
		return
	}
	c.keep(cn)
}

// take is a kept connection, or nil.
func (c *Client) take() *conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.idle)
	if n == 0 {
		return nil
	}
	cn := c.idle[n-1]
	c.idle[n-1] = nil
	c.idle = c.idle[:n-1]
	return cn
}

// maxIdle bounds the connections kept: as many as the stage has requests
// in flight at most.
const maxIdle = 8

// keep keeps cn for the next request, unless the server said it closes it.
func (c *Client) keep(cn *conn) {
	if cn.closing {
		cn.close()
		return
	}
	c.mu.Lock()
	if len(c.idle) < maxIdle {
		c.idle = append(c.idle, cn)
		cn = nil
	}
	c.mu.Unlock()
	if cn != nil {
		cn.close()
	}
}

// requestError says why a request got no answer, never with its content.
func requestError(ctx context.Context, sock string, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("fill socket %s: not answering: %w", sock, ctx.Err())
	case errors.Is(err, errTimedOut):
		return fmt.Errorf("fill socket %s: not answering within %s: %w", sock, timeout, context.DeadlineExceeded)
	}
	if na, ok := errors.AsType[*noAnswerError](err); ok {
		return fmt.Errorf("fill socket %s: not answering: %w", sock, na.cause)
	}
	return fmt.Errorf("fill socket %s: %w", sock, err)
}

// answer decodes a 2xx answer's body into out, or makes a non-2xx one a
// *StatusError.
func answer(sock string, status int, raw []byte, out any) error {
	if status < 200 || status > 299 {
		var eb errorBody
		msg := ""
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		} else {
			msg = strings.TrimSpace(string(raw))
		}
		// its start and its end (spec.CutMiddle, as a report's reason
		// is cut): with the status and the socket before them, the error
		// fits a report's 512 bytes whole, and a program's last words,
		// where it says why it failed, are kept
		msg = spec.CutMiddle(msg, 370)
		e := &StatusError{Socket: sock, Status: status, Msg: msg}
		if status == http.StatusConflict {
			e.Held, e.Holder, e.HeldKey = eb.Path, eb.Holder, eb.Key
		}
		e.ProgramFailed = status >= 500 && eb.ProgramFailed
		return e
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("fill socket %s: decoding the answer: %w", sock, err)
	}
	return nil
}
