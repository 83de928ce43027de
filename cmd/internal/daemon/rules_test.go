package daemon

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The example alerting rules of the client's metrics parse as
// Prometheus's rule file, and every metric they name is one a real
// client serves.
func TestTheClientsExampleAlertRulesNameOnlyMetricsItServes(t *testing.T) {
	raw, err := os.ReadFile("../../../examples/prometheus/mesh-provisioner-client.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("rule file: %v", err)
	}

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
	metric := regexp.MustCompile(`\bprovisioner_[a-z_]+`)
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			if _, err := model.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%q: no name, severity or summary", r.Alert)
			}
			names := metric.FindAllString(r.Expr, -1)
			if len(names) == 0 || strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: expr %q names no metric of the client or is unbalanced", r.Alert, r.Expr)
			}
			for _, name := range names {
				if !strings.Contains(served, "\n"+name+"{") && !strings.Contains(served, "\n"+name+" ") {
					t.Errorf("%s: expr names %s, which the client does not serve", r.Alert, name)
				}
			}
		}
	}
	if n < 4 {
		t.Errorf("%d rules", n)
	}
}
