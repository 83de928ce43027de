// Package rulecheck checks an example Prometheus alerting rules file
// against what a program's /metrics serves: the tests of the client's and
// the server's rules share it.
package rulecheck

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Check reads the rules file at path (Prometheus's rule file shape, no
// field it does not know) and checks every rule: a name, a valid `for`, a
// severity and a summary, an expression with balanced parentheses naming
// at least one metric whose name starts with prefix, and each such metric
// one served names (served: the /metrics text). It returns the alerts by
// name.
func Check(t testing.TB, path, prefix, served string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
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
		t.Fatalf("rule file %s: %v", path, err)
	}
	served = "\n" + served
	metric := regexp.MustCompile(`\b` + regexp.QuoteMeta(prefix) + `[a-z_]+`)
	alerts := map[string]bool{}
	for _, g := range file.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q is empty or unnamed", g.Name)
		}
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			if _, err := model.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%q: no name, severity or summary", r.Alert)
			}
			names := metric.FindAllString(r.Expr, -1)
			if len(names) == 0 || strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: expr %q names no metric %s… or is unbalanced", r.Alert, r.Expr, prefix)
			}
			for _, n := range names {
				if !strings.Contains(served, "\n"+n+"{") && !strings.Contains(served, "\n"+n+" ") {
					t.Errorf("%s: expr names %s, which is not served", r.Alert, n)
				}
			}
		}
	}
	return alerts
}
