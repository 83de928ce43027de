package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// errAskAgain, from take, asks for the same page again (at most
// asksPerPage times in all).
var errAskAgain = errors.New("ask for the page again")

// asksPerPage bounds how often one page is asked: with two servers on one
// bus (a rolling upgrade; the verb's queue group answers each request from
// either) a later page comes from the server that answered page 0 at
// least once in eight asks but for one time in 256.
const asksPerPage = 8

// askPages asks the verb req page after page (what says what is asked
// for, in errors), handing each reply to take, until the last page. A
// reply {"error"} is an error; take's errAskAgain asks for the page again.
func askPages(ctx context.Context, nc *nats.Conn, req Request, what string, take func(page int, data []byte) error) error {
	asked := 0
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
		if err := take(page, m.Data); errors.Is(err, errAskAgain) {
			if asked++; asked < asksPerPage {
				page--
				continue
			}
			return err
		} else if err != nil {
			return err
		}
		asked = 0
		if page+1 >= head.Pages {
			return nil
		}
	}
}
