package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The verb's stood_after is a Go duration: each one it cannot take is
// {"error"} saying what is wrong with it, so an operator who writes a day
// as "1d" (Go has no unit d) or a duration past Go's ~292 years is told
// what to write instead of only that it "is not a duration".
func TestSweepSaysWhatIsWrongWithAStoodAfter(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	serveQuery(t, nc, js)
	for body, says := range map[string]string{
		`{"what":"sweep","stood_after":"0s"}`:           "not positive",
		`{"what":"sweep","stood_after":"-1m"}`:          "not positive",
		`{"what":"sweep","stood_after":"abc"}`:          "e.g. 10m",
		`{"what":"sweep","stood_after":"10"}`:           "unit",
		`{"what":"sweep","stood_after":"1d"}`:           "24h",
		`{"what":"sweep","stood_after":"2d12h"}`:        "24h",
		`{"what":"sweep","stood_after":"99999999999h"}`: "too long",
		`{"what":"needs","stood_after":"10m"}`:          "for what sweep",
	} {
		r, raw := askRaw(t, nc, []byte(body))
		if r.Error == "" || !strings.Contains(r.Error, says) {
			t.Errorf("%s answered %s, want an error saying %q", body, raw, says)
		}
	}
	for _, ok := range []string{`{"what":"sweep","stood_after":"2562047h"}`, `{"what":"sweep","stood_after":"1h30m"}`} {
		if r, raw := askRaw(t, nc, []byte(ok)); r.Error != "" {
			t.Errorf("%s answered %s", ok, raw)
		}
	}
}
