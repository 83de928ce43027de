package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/rulecheck"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The example alerting rules of the client's metrics parse as
// Prometheus's rule file, and every metric they name is one a real
// client serves.
func TestTheClientsExampleAlertRulesNameOnlyMetricsItServes(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	var served string
	bustest.Eventually(t, 5*time.Second, func() error {
		_, b := ctlGet(t, sock, "/metrics")
		if served = "\n" + string(b); !strings.Contains(served, "\nprovisioner_needs{") {
			return fmt.Errorf("no needs yet")
		}
		return nil
	})
	alerts := rulecheck.Check(t, "../../../examples/prometheus/mesh-provisioner-client.rules.yml", "provisioner_", served)
	if len(alerts) < 4 {
		t.Errorf("%d alerts", len(alerts))
	}
}
