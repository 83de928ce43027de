package server

import (
	"reflect"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
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

// Every key the sweep says out of shape is counted in
// mesh_provisioner_out_of_shape by its bucket, so that the series sum to
// the sweep's summary.out_of_shape: a report, an item or an assignment
// out of shape was counted in no series (mesh_provisioner_needs counts
// the needs bucket's alone), and a bucket with none is served at 0.
func TestEveryKeyOutOfShapeIsCountedByItsBucket(t *testing.T) {
	js, needs := aceWebRegistered(t)
	put(t, needs, "ace.web.config.a=zz", `{}`)
	put(t, needs, "ace.web.config.bad", `not json`)
	put(t, bucket(t, js, spec.AppliedBucket), "ace.web", `garbage`)
	put(t, bucket(t, js, spec.AppliedBucket), "ace.web.extra", `{}`)
	put(t, bucket(t, js, spec.CollectBucket), "ace.shell=3Azsh.web", `nope`)
	reg, _ := newMetrics(newSweepCache(js), quietLog())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "mesh_provisioner_out_of_shape" {
			continue
		}
		for _, m := range f.Metric {
			got[m.Label[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{spec.NeedsBucket: 2, spec.AppliedBucket: 2, spec.CollectBucket: 1, spec.AssignmentsBucket: 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mesh_provisioner_out_of_shape by bucket %v, want %v", got, want)
	}
}
