package fill

import (
	"testing"
	"unsafe"
)

// A decoded answer's action is kept as the package's constant, not as the
// decoder's copy (a client keeps one per file it filled); another word is
// kept as it came.
func TestCanonicalActionsAreTheConstants(t *testing.T) {
	for _, a := range []string{ActionWritten, ActionUnchanged, ActionKept, ActionMerged, ActionRemoved} {
		decoded := string([]byte(a)) // a copy, as json.Unmarshal makes
		if got := Canonical(decoded); got != a || unsafe.StringData(got) != unsafe.StringData(a) {
			t.Errorf("Canonical(%q) is not the constant", a)
		}
	}
	if got := Canonical("shuffled"); got != "shuffled" {
		t.Errorf("Canonical(shuffled) = %q", got)
	}
}
