package daemon

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
)

// A client configured with nothing asks the vault on SPEC §4.2's timings:
// no reply within 5 s is silence, absent or silent is asked again after
// 1 s doubling to 1 min, refused after 10 minutes, and the asks again when
// the bus comes back are spread over a few seconds.
func TestTheVaultTimingsDefaultToTheSpecs(t *testing.T) {
	var c Config
	c.defaults()
	if c.VaultTimeout != 5*time.Second || c.RefusedRetry != 10*time.Minute {
		t.Errorf("vault timeout %v, refused retry %v; want 5s and 10m", c.VaultTimeout, c.RefusedRetry)
	}
	if c.ReaskSpread <= 0 || c.ReaskSpread > 10*time.Second {
		t.Errorf("reask spread %v; want a few seconds", c.ReaskSpread)
	}
	b := backoff.Doubling{Min: c.BackoffMin, Max: c.BackoffMax}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		if got := b.Next(i); got != w*time.Second {
			t.Errorf("ask %d after %v, want %v (1 s doubling to 1 min)", i+2, got, w*time.Second)
		}
	}
}
