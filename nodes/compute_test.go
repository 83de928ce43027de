package nodes

import (
	"testing"

	"github.com/novox/mesh-provisioner/graph"
)

func TestIsNeedKey(t *testing.T) {
	phs := []Placeholder{{"config", "a"}, {"config", "a:b"}, {"bound", "x/l:k"}, {"con", "fig:a"}, {"config", "ab"}}
	mods := []string{"m", "m/", "mo"}
	for _, m := range mods {
		for _, ph := range phs {
			k := needKey(m, ph)
			for _, m2 := range mods {
				for _, ph2 := range phs {
					want := k == needKey(m2, ph2)
					if got := isNeedKey(k, m2, ph2); got != want {
						t.Errorf("isNeedKey(%v, %q, %v) = %v, want %v", k, m2, ph2, got, want)
					}
				}
			}
			if isNeedKey(graph.Key{Kind: KindItem, Name: k.Name}, m, ph) {
				t.Errorf("isNeedKey took kind %s", KindItem)
			}
		}
	}
}
