package fill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultSocket is where the node-engine's fill socket listens unless told.
const DefaultSocket = "/run/nox-mesh-host/fill.sock"

// DefaultTimeout bounds one fill request when Client.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Client sends fill requests to a fill socket (the daemon side).
type Client struct {
	// Socket is the unix socket path; DefaultSocket when empty.
	Socket string
	// Timeout bounds one request; DefaultTimeout when zero.
	Timeout time.Duration
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
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("fill socket %s: %d %s: %s", e.Socket, e.Status, http.StatusText(e.Status), e.Msg)
}

// Fill sends one module's files in one request and returns what the
// node-engine did. A socket that does not answer gives an error saying so; a
// non-2xx answer gives a *StatusError carrying the server's error text, which
// is the node-engine's and may quote a file (see StatusError). The client
// puts no file content in an error itself.
func (c *Client) Fill(ctx context.Context, req Request) (Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("fill socket %s: encoding the request of module %q: %w", c.socket(), req.Module, err)
	}
	var out Response
	err = c.do(ctx, http.MethodPost, FillPath, body, &out)
	return out, err
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

// do sends one request to the socket and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, method, route string, body []byte, out any) error {
	sock := c.socket()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		DisableKeepAlives: true,
	}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport}

	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, "http://fill"+route, rd)
	if err != nil {
		return fmt.Errorf("fill socket %s: %w", sock, err)
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("fill socket %s: not answering: %w", sock, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("fill socket %s: reading the answer: %w", sock, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var eb errorBody
		msg := ""
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		} else {
			msg = strings.TrimSpace(string(raw))
		}
		if len(msg) > 512 { // the caller bounds it again at a character boundary
			msg = msg[:512] + "…"
		}
		return &StatusError{Socket: sock, Status: resp.StatusCode, Msg: msg}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("fill socket %s: decoding the answer: %w", sock, err)
	}
	return nil
}
