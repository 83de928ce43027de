package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A client given another node's user and password (--node g14 --user
// provisioner-ace: a creds file is checked before it connects, a password
// cannot be) connected and ran for ever saying only "the initial load is
// not done" (an outside audit). /healthz says why, and an error line
// names it; the client with its own user is ready.
func TestAClientWithAnotherNodesUserSaysSo(t *testing.T) {
	m := exampleBus(t)
	wrong, right := ctlSock(t), ctlSock(t)
	m.client("g14", asUser("provisioner-ace"), withControl(wrong))
	m.client("ace", asUser("provisioner-ace"), withControl(right))
	const why = "the bus does not let user provisioner-ace hear replies on _INBOX.provisioner.g14.> (the user of another node or role?)"
	bustest.Eventually(t, 20*time.Second, func() error {
		code, b, err := ctlTry(wrong, "/healthz")
		if err != nil {
			return err
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(string(b), why) {
			return fmt.Errorf("/healthz of the client with another node's user: %d %s", code, b)
		}
		return nil
	})
	if !strings.Contains(m.logs.String(), why) {
		t.Fatalf("no log line says %q", why)
	}
	bustest.Eventually(t, 20*time.Second, func() error {
		if code, b, err := ctlTry(right, "/healthz"); err != nil || code != http.StatusOK {
			return fmt.Errorf("/healthz of the client with its own user: %d %s %v", code, b, err)
		}
		return nil
	})
}
