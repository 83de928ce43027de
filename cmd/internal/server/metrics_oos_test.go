package server

import (
	"testing"
)

// A need key out of shape, or one whose value is, is counted in
// mesh_provisioner_needs under the owner its finding names (the client
// that wrote it), and a key whose kind cannot be read under kind
// "unknown": no sample carries an empty label, which Prometheus reads as
// no label at all (a dashboard's `sum by (owner)` showed a blank owner
// where the sweep says mesh-provisioner-client).
func TestOutOfShapeNeedsAreLabelledByTheClientThatWroteThem(t *testing.T) {
	js, needs := aceWebRegistered(t)
	put(t, needs, "ace.web.config.a=zz", `{}`)          // the key out of shape
	put(t, needs, "ace.web.config.bad", `not json`)     // the value out of shape
	put(t, needs, "ace.web.config.st", `{"state":"?"}`) // likewise
	reg, _ := newMetrics(newSweepCache(js), quietLog())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "mesh_provisioner_needs" {
			continue
		}
		for _, m := range f.Metric {
			l := map[string]string{}
			for _, p := range m.Label {
				l[p.GetName()] = p.GetValue()
			}
			if len(l) != 3 || l["verdict"] == "" || l["kind"] == "" || l["owner"] == "" {
				t.Errorf("a sample with a label missing or empty: %v", l)
			}
			got[l["verdict"]+"|"+l["kind"]+"|"+l["owner"]] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"out_of_shape|unknown|mesh-provisioner-client": 1,
		"out_of_shape|config|mesh-provisioner-client":  2,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("mesh_provisioner_needs{%s} = %v, want %v (all: %v)", k, got[k], n, got)
		}
	}
}
