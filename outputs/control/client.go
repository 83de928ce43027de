package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"
)

// ErrNotRunning marks an answer that did not come because no daemon
// listens on the control socket.
var ErrNotRunning = errors.New("the daemon is not running")

// Client asks a daemon's control socket, with one HTTP client over it.
type Client struct {
	sock string
	hc   *http.Client
}

// NewClient is a client of the control socket sock; each request gives up
// after timeout.
func NewClient(sock string, timeout time.Duration) *Client {
	return &Client{sock: sock, hc: &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}}
}

// AnswerError is an answer of the socket that is not 200.
type AnswerError struct {
	Socket, Path string
	Code         int
	Body         ErrorBody // as the socket said it; empty when it was not JSON
	Raw          []byte
}

func (e *AnswerError) Error() string {
	if e.Body.Error != "" {
		return e.Body.Error
	}
	return fmt.Sprintf("control socket %s: %s answered %d: %s", e.Socket, e.Path, e.Code, e.Raw)
}

// Get asks for path (such as "/metrics") and returns the answer, whatever
// its status code. An error says why no answer came.
func (c *Client) Get(ctx context.Context, path string) (int, []byte, error) {
	if c.sock == "" { // the dial's "missing address" reads as a daemon that does not answer
		return 0, nil, errors.New("no control socket named: --control is empty; name the daemon's control socket")
	}
	if err := CheckSocketPath(c.sock); err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://control"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return 0, nil, fmt.Errorf("%w: there is no control socket %s (start it with `mesh-provisioner-client run`, or name its socket with --control)", ErrNotRunning, c.sock)
		case errors.Is(err, syscall.ECONNREFUSED):
			if fi, serr := os.Lstat(c.sock); serr == nil && fi.Mode()&os.ModeSocket == 0 {
				// A connect to a file that is no socket is refused too: say
				// what it is rather than that the daemon is down.
				return 0, nil, fmt.Errorf("%s is not a socket (%s): name the daemon's control socket with --control", c.sock, kindOf(fi))
			}
			return 0, nil, fmt.Errorf("%w: nothing answers on the control socket %s, left by a daemon that stopped (start it with `mesh-provisioner-client run`, or name its socket with --control)", ErrNotRunning, c.sock)
		case errors.Is(err, os.ErrPermission):
			return 0, nil, fmt.Errorf("control socket %s: permission denied (it is mode 0600: run this as the daemon's user or root)", c.sock)
		}
		if ne := net.Error(nil); errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			// said without the HTTP request and Go's timeout wording
			return 0, nil, fmt.Errorf("control socket %s took the request but did not answer within %v: the daemon there is stuck or busy (its log says more), or another program listens on it", c.sock, c.hc.Timeout)
		}
		return 0, nil, fmt.Errorf("control socket %s does not answer: %w", c.sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("control socket %s: reading the answer to %s: %w", c.sock, path, err)
	}
	return resp.StatusCode, b, nil
}

// ask gets path; an answer other than 200 is an *AnswerError.
func (c *Client) ask(ctx context.Context, path string) ([]byte, error) {
	code, b, err := c.Get(ctx, path)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		e := &AnswerError{Socket: c.sock, Path: path, Code: code, Raw: b}
		_ = json.Unmarshal(b, &e.Body)
		return nil, e
	}
	return b, nil
}

// Modules asks for every module of the node.
func (c *Client) Modules(ctx context.Context) (*Modules, error) {
	var m Modules
	return &m, c.parse(ctx, "/v1/modules", &m)
}

// ModulesJSON is Modules' answer as the socket said it, but for control
// bytes any left raw, made JSON escapes.
func (c *Client) ModulesJSON(ctx context.Context) ([]byte, error) {
	b, err := c.ask(ctx, "/v1/modules")
	return jsonSafe(b), err
}

// Explain asks why module is as it is.
func (c *Client) Explain(ctx context.Context, module string) (*Explanation, error) {
	var e Explanation
	return &e, c.parse(ctx, explainPath(module), &e)
}

// ExplainJSON is Explain's answer as the socket said it, but for control
// bytes any left raw, made JSON escapes.
func (c *Client) ExplainJSON(ctx context.Context, module string) ([]byte, error) {
	b, err := c.ask(ctx, explainPath(module))
	return jsonSafe(b), err
}

func explainPath(module string) string { return "/v1/explain?module=" + url.QueryEscape(module) }

// parse asks for path and parses its JSON answer into v.
func (c *Client) parse(ctx context.Context, path string, v any) error {
	b, err := c.ask(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("control socket %s: %s: %w", c.sock, path, err)
	}
	return nil
}

// DOT asks for the graph in Graphviz DOT: all of it, or module ("" for
// all) and what it reads.
func (c *Client) DOT(ctx context.Context, module string) ([]byte, error) {
	path := "/v1/graph.dot"
	if module != "" {
		path += "?module=" + url.QueryEscape(module)
	}
	return c.ask(ctx, path)
}

// kindOf says what kind of file fi is, for a message.
func kindOf(fi os.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	}
	return "not a socket"
}
