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
// permission violation is a warning; anything else an error.
func TestAsyncErrorsAreSaidAtTheirWorth(t *testing.T) {
	for _, c := range []struct {
		err   error
		level string
	}{
		{nats.ErrConsumerNotFound, ""},
		{jetstream.ErrConsumerNotFound, ""},
		{fmt.Errorf("%w: recreating ordered consumer", nats.ErrConsumerDeleted), ""},
		{nats.ErrPermissionViolation, `"level":"warn"`},
		{errors.New("nats: slow consumer, messages dropped"), `"level":"error"`},
	} {
		logs := &bustest.Buffer{}
		asyncError(zerolog.New(logs).Level(zerolog.InfoLevel), nil, c.err)
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
