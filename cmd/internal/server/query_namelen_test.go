package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A narrowing name longer than any key's token (spec.MaxNameBytes, 255
// bytes encoded) is refused at once with {"error"} naming its field and
// the bound, the name quoted cut: before, a node of 600,000 bytes on the
// default bus went unanswered (the refusal quoted it twice and exceeded
// the payload), and of 8,000 on a 16 KiB bus was answered with an
// internal error quoting the watch's filters. So is every other field a
// refusal quotes (what, stood_after, an unknown field's name): cut, so
// that the refusal fits the bus.
func TestALongNarrowingNameIsRefusedSayingTheBound(t *testing.T) {
	for _, bus := range []struct {
		name       string
		maxPayload int32
		long       int
	}{{"default bus", 0, 600000}, {"16 KiB bus", 16 * 1024, 8000}} {
		t.Run(bus.name, func(t *testing.T) {
			s := bustest.Start(t, func(o *natsd.Options) {
				if bus.maxPayload > 0 {
					o.MaxPayload = bus.maxPayload
				}
			})
			nc, js := bustest.JetStream(t, s)
			ensure(t, js)
			serveQuery(t, nc, js)
			long := strings.Repeat("a", bus.long)
			for _, c := range []struct {
				req  map[string]any
				says string
			}{
				{map[string]any{"what": "needs", "node": long}, "node is"},
				{map[string]any{"what": "needs", "module": long}, "module is"},
				{map[string]any{"what": "collect", "collection": long}, "collection is"},
				{map[string]any{"what": "collect", "contributor": long}, "contributor is"},
				{map[string]any{"what": "sweep", "node": long}, "node is"},
				{map[string]any{"what": "sweep", "module": long}, "module is"},
				{map[string]any{"what": long}, "is not one of registry"},
				{map[string]any{"what": "sweep", "stood_after": long}, "is not a duration"},
				{map[string]any{long: 1}, "unknown field"},
			} {
				body, _ := json.Marshal(c.req)
				r, raw := askRaw(t, nc, body)
				if r.Error == "" || !strings.Contains(r.Error, c.says) {
					t.Errorf("%.60s…: answered %.300s, want an error saying %q", body, raw, c.says)
				}
				if bound := fmt.Sprintf("%s %d bytes encoded, over the limit of 255", c.says, bus.long); strings.HasSuffix(c.says, " is") && !strings.Contains(r.Error, bound) {
					t.Errorf("%.60s…: %q does not name the bound", body, r.Error)
				}
				if len(raw) > 1024 || strings.Contains(r.Error, strings.Repeat("a", 200)) {
					t.Errorf("%.60s…: a refusal of %d bytes quotes the name whole: %.300s", body, len(raw), raw)
				}
			}
			// A name of 255 bytes encoded is one a key may hold: taken.
			for _, name := range []string{strings.Repeat("b", 255), strings.Repeat(".", 85)} {
				if r, raw := askRaw(t, nc, []byte(`{"what":"needs","node":"`+name+`"}`)); r.Error != "" {
					t.Errorf("a node of 255 bytes encoded: %.300s", raw)
				}
			}
			// One of 86 dots is 258 bytes encoded (=2E each): refused.
			if r, _ := askRaw(t, nc, []byte(`{"what":"applied","node":"`+strings.Repeat(".", 86)+`"}`)); !strings.Contains(r.Error, "node is 258 bytes encoded, over the limit of 255") {
				t.Errorf("a node of 86 dots: %q", r.Error)
			}
		})
	}
}
