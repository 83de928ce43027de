package daemon

import (
	"fmt"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/cmd/internal/rulecheck"
)

// textfileScript is the example script that carries a node's client
// metrics into node_exporter's textfile directory, the way the client's
// example alert rules are read.
const textfileScript = "../../../examples/prometheus/mesh-provisioner-client-textfile.sh"

// runTextfile runs the example script against the control socket sock
// into dir and returns the file it leaves for node_exporter.
func runTextfile(t *testing.T, sock, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl:", err)
	}
	cmd := exec.Command("sh", textfileScript)
	cmd.Env = append(os.Environ(), "CONTROL="+sock, "TEXTFILE_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", textfileScript, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "mesh-provisioner-client.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 {
		t.Errorf("the script left %v in the textfile directory, want its .prom alone", left)
	}
	return string(b)
}

// TestTheClientsMetricsReachNodeExporterAsTheRulesReadThem: the client's
// /metrics is a unix socket, so its alert rules read it through
// node_exporter's textfile directory. The example script that carries it
// there leaves out the go_ and process_ families (node_exporter serves
// its own: the same names twice fail its scrape's gather, "collected
// before with the same name and label values"), keeps every metric the
// rules name, and, with the client not answering, leaves
// provisioner_healthy 0 rather than the last file written (which would
// say healthy for ever) or none (no alert fires on no series).
func TestTheClientsMetricsReachNodeExporterAsTheRulesReadThem(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	dir := t.TempDir()
	var text string
	bustest.Eventually(t, 10*time.Second, func() error {
		if text = runTextfile(t, sock, dir); !strings.Contains(text, "\nprovisioner_healthy 1\n") {
			return fmt.Errorf("not healthy yet:\n%s", text)
		}
		return nil
	})
	if own := regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?(go|process)_`).FindString(text); own != "" {
		t.Errorf("the textfile holds %q…, which node_exporter serves of itself:\n%s", own, text)
	}
	rulecheck.Check(t, "../../../examples/prometheus/mesh-provisioner-client.rules.yml", "provisioner_", text)

	gone := filepath.Join(t.TempDir(), "gone.sock")
	if got := runTextfile(t, gone, dir); !strings.Contains("\n"+got, "\nprovisioner_healthy 0\n") {
		t.Errorf("with the client not answering, the textfile holds %q, want provisioner_healthy 0", got)
	}
}
