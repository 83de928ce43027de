package main

import (
	"strings"
	"testing"
)

// A --node that is not UTF-8 names no node (SPEC §2.1 encodes a name's
// UTF-8 form; DESIGN "Names are UTF-8 text"): every key it would read or
// write (a=FF.<module>) is out of shape, so the client ran for ever with no
// module and every key it wrote was listed out of shape by the server. It
// is refused at start, exit 2, as a --node holding "/" is.
func TestRunRefusesANodeThatIsNotUTF8(t *testing.T) {
	code, _, stderr := runCLIWithin(t, "run", "--node", "a\xff", "--nats", "nats://127.0.0.1:1", "--control", "", "--state-dir", t.TempDir())
	if code != 2 || !strings.HasPrefix(stderr, `run: --node "a\xff"`) || !strings.Contains(stderr, "UTF-8") {
		t.Errorf("exit %d, stderr %q; want 2 and a refusal naming UTF-8", code, stderr)
	}
}
