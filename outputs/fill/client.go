package fill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

// Fill sends one module's files in one request and returns what the
// node-engine did. A socket that does not answer gives an error saying so; a
// non-2xx answer gives an error carrying the server's error text. File content
// never appears in an error.
func (c *Client) Fill(ctx context.Context, req Request) (Response, error) {
	sock := c.socket()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("fill socket %s: encoding the request of module %q: %w", sock, req.Module, err)
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

	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://fill"+FillPath, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("fill socket %s: %w", sock, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hreq)
	if err != nil {
		return Response{}, fmt.Errorf("fill socket %s: not answering: %w", sock, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return Response{}, fmt.Errorf("fill socket %s: reading the answer: %w", sock, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var eb errorBody
		msg := ""
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		} else {
			msg = strings.TrimSpace(string(raw))
			if len(msg) > 512 {
				msg = msg[:512] + "…"
			}
		}
		return Response{}, fmt.Errorf("fill socket %s: %s: %s", sock, resp.Status, msg)
	}
	var out Response
	if err := json.Unmarshal(raw, &out); err != nil {
		return Response{}, fmt.Errorf("fill socket %s: decoding the answer: %w", sock, err)
	}
	return out, nil
}
