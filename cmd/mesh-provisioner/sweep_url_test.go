package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A --nats holding user:password@ is on the command line of a cron job
// whose stderr goes to mail or a CI log: what the sweep says when it
// cannot sweep names the URL redacted, as serve and the client do (before:
// "connecting to nats://alice:S3CRET@…" and the url package's own error
// quoting it again). A URL that does not parse exits 2 naming it.
func TestASweepThatCannotConnectNeverPrintsTheURLsPassword(t *testing.T) {
	const pw = "S3CRET-sweep-pw"
	port := bustest.FreePort(t)
	s := bustest.Start(t) // a bus where no server answers the verb
	for _, c := range []struct{ url, says string }{
		{fmt.Sprintf("nats://alice:%s@127.0.0.1:%d", pw, port), "connecting to nats://[redacted]@127.0.0.1:"},
		{"nats://alice:" + pw + "@127.0.0.1:bad", `--nats "nats://[redacted]@127.0.0.1:bad" is not a URL`},
		{"nats://alice:" + pw + "@" + strings.TrimPrefix(s.ClientURL(), "nats://"), "no server answers mesh-provisioner.provisioning on nats://[redacted]@"},
	} {
		code, out, errs := runSweep("--nats", c.url)
		if code != 2 || strings.Contains(out+errs, pw) || !strings.Contains(errs, c.says) {
			t.Errorf("--nats %s: exit %d, stdout %q, stderr %q; want 2, saying %q, never the password", c.url, code, out, errs, c.says)
		}
	}
}
