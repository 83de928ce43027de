package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// What the connection reports on its own is said at the level it is
// worth: a consumer gone (a watch's, at a stop or deleted under it: the
// watch says that itself) is no error line in the operator's log; a
// permission violation is a warning; a consumer's heartbeats missed while
// the bus is away (said every few seconds until it is back) no error line,
// and a warning on a live connection; anything else an error.
func TestAsyncErrorsAreSaidAtTheirWorth(t *testing.T) {
	for _, c := range []struct {
		err          error
		disconnected bool
		level        string
	}{
		{nats.ErrConsumerNotFound, false, ""},
		{jetstream.ErrConsumerNotFound, false, ""},
		{fmt.Errorf("%w: recreating ordered consumer", nats.ErrConsumerDeleted), false, ""},
		{nats.ErrConsumerNotActive, true, ""},
		{nats.ErrConsumerNotActive, false, `"level":"warn"`},
		{nats.ErrPermissionViolation, false, `"level":"warn"`},
		{errors.New("nats: slow consumer, messages dropped"), false, `"level":"error"`},
	} {
		logs := &bustest.Buffer{}
		asyncError(zerolog.New(logs).Level(zerolog.InfoLevel), nil, c.err, !c.disconnected)
		got := logs.String()
		if c.level == "" {
			if got != "" {
				t.Errorf("%v: said %q at info level or above, want nothing", c.err, got)
			}
			continue
		}
		if !strings.Contains(got, c.level) || !strings.Contains(got, c.err.Error()) {
			t.Errorf("%v: said %q, want %s with the error", c.err, got, c.level)
		}
	}
}
