package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
)

// controlGet asks a client's control socket for path (as the operator's
// `mesh-provisioner-client graph explain` does).
func controlGet(ctx context.Context, sock, path string) ([]byte, error) {
	c := daemon.ControlClient(sock, 10*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://control"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: reading %s: %w", sock, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("control socket %s: %s: %s", sock, path, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// explainModule asks the client on sock why module is as it is.
func explainModule(ctx context.Context, sock, module string) (*daemon.Explanation, error) {
	b, err := controlGet(ctx, sock, "/v1/explain?module="+url.QueryEscape(module))
	if err != nil {
		return nil, err
	}
	var e daemon.Explanation
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("control socket %s: explanation of %s: %w", sock, module, err)
	}
	return &e, nil
}
