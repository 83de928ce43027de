package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// askPages asks the verb req page after page (what says what is asked
// for, in errors), handing each reply to take, until the last page. A
// reply {"error"} is an error.
func askPages(ctx context.Context, nc *nats.Conn, req Request, what string, take func(page int, data []byte) error) error {
	for page := 0; ; page++ {
		req.Page = page
		body, _ := json.Marshal(req)
		m, err := nc.RequestWithContext(ctx, spec.QuerySubject, body)
		if err != nil {
			return fmt.Errorf("asking %s for %s: %w", spec.QuerySubject, what, err)
		}
		var head struct {
			Pages int    `json:"pages"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &head); err != nil {
			return fmt.Errorf("the reply with %s is not JSON: %w", what, err)
		}
		if head.Error != "" {
			return fmt.Errorf("the server answered: %s", head.Error)
		}
		if err := take(page, m.Data); err != nil {
			return err
		}
		if page+1 >= head.Pages {
			return nil
		}
	}
}
