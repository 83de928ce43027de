package vault

import (
	"testing"
	"time"
)

// The refused names among those given are asked again at once (a
// consumer's assignment written again: its credentials, asked in the
// provider's name), not after the refused retry; a sealed one, one not
// given and one never asked are not.
func TestTheRefusedNamesGivenAreAskedAgainAtOnce(t *testing.T) {
	mine, other, held := "pair/gitea/gitea-read/g14/cc", "pair/gitea/gitea-read/g14/other", "pair/gitea/gitea-read/g14/cc/x"
	a, v := startAsker(t, map[string][]string{mine: {StatusRefused, StatusSealed}, other: {StatusRefused}, held: {StatusSealed}}, time.Hour)
	for _, n := range []string{mine, other, held} {
		a.Ask(n, "")
		nextAnswer(t, a)
	}
	if n := a.AskRefused([]string{mine, held, "pair/gitea/gitea-read/g14/never"}); n != 1 {
		t.Fatalf("AskRefused asked %d names again, want 1", n)
	}
	if an := nextAnswer(t, a); an.Name != mine || an.Result.Outcome != Sealed {
		t.Fatalf("%s: %v, want %s sealed", an.Name, an.Result, mine)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(v.times(other)); n != 1 {
		t.Fatalf("%s asked %d times, want once: it was not given", other, n)
	}
	if n := len(v.times(held)); n != 1 {
		t.Fatalf("%s asked %d times, want once: it is sealed", held, n)
	}
}
