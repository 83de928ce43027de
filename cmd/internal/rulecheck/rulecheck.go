// Package rulecheck checks an example Prometheus alerting rules file
// against what a program's /metrics serves: the tests of the client's and
// the server's rules share it.
package rulecheck

import (
	"bytes"
	"os"
	"regexp"
	"sort"
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
			checkLabels(t, r.Alert, r.Expr, names, served)
		}
	}
	return alerts
}

var (
	selectorRE = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	seriesRE   = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
)

// targetLabels are those Prometheus adds to every series it scrapes.
var targetLabels = map[string]bool{"instance": true, "job": true}

// checkLabels checks the labels expr names: each of a selector's matchers
// and each by/without label is one a metric the expression names is
// served with (or a target's, instance and job), and each value a
// selector asks for with = is served, or named in the metric's HELP (a
// value the metric takes only in some states of the mesh, e.g.
// verdict="stood_asked"), so no rule waits on a series that never comes.
func checkLabels(t testing.TB, alert, expr string, names []string, served string) {
	t.Helper()
	labels := map[string]map[string]map[string]bool{} // metric -> label -> values served
	for _, m := range seriesRE.FindAllStringSubmatch(served, -1) {
		if labels[m[1]] == nil {
			labels[m[1]] = map[string]map[string]bool{}
		}
		for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if labels[m[1]][lm[1]] == nil {
				labels[m[1]][lm[1]] = map[string]bool{}
			}
			labels[m[1]][lm[1]][lm[3]] = true
		}
	}
	help := func(metric string) string {
		for _, l := range strings.Split(served, "\n") {
			if h, ok := strings.CutPrefix(l, "# HELP "+metric+" "); ok {
				return h
			}
		}
		return ""
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(expr, -1) {
		metric := sel[1]
		for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			label, op, value := m[1], m[2], m[3]
			if targetLabels[label] {
				continue
			}
			values, ok := labels[metric][label]
			if !ok {
				t.Errorf("%s: %s{%s…}: %s is served with no label %s", alert, metric, label, metric, label)
				continue
			}
			if op == "=" && !values[value] && !regexp.MustCompile(`(^|[^a-z_])`+regexp.QuoteMeta(value)+`($|[^a-z_])`).MatchString(help(metric)) {
				t.Errorf("%s: %s{%s=%q}: no such value served (served: %v) nor in its HELP", alert, metric, label, value, keys(values))
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, label := range strings.Split(g[1], ",") {
			label = strings.TrimSpace(label)
			if label == "" || targetLabels[label] {
				continue
			}
			found := false
			for _, n := range names {
				if _, ok := labels[n][label]; ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: groups by %s, a label none of %v is served with", alert, label, names)
			}
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
