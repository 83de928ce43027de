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
	if n := a.AskRefused([]string{mine, held, "pair/gitea/gitea-read/g14/never"}, 0); n != 1 {
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

// A name the vault answered and whose next ask is set (the refused retry,
// an absence's backoff) is not asked again by Ask: a module's files made
// anew (its plan moved to another templates archive) read it again. Before,
// each such Ask asked at once, beside the ask AskRefusedOf makes as the
// plan is written: two asks of one refused consumer credential 8 ms apart
// (an outside audit). A sealed name is asked again (its value is the
// graph's to keep), and so is one whose credential form moved.
func TestAskingAgainANameAnsweredAndDueAgainAsksNothing(t *testing.T) {
	refused, sealed := "pair/gitea/gitea-read/g14/cc", "own/cc/other"
	a, v := startAsker(t, map[string][]string{refused: {StatusRefused}, sealed: {StatusSealed}}, time.Hour)
	for _, n := range []string{refused, sealed} {
		a.Ask(n, "")
		nextAnswer(t, a)
	}
	for _, n := range []string{refused, sealed} {
		a.Ask(n, "")
	}
	if an := nextAnswer(t, a); an.Name != sealed {
		t.Fatalf("%s answered, want only %s asked again", an.Name, sealed)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(v.times(refused)); n != 1 {
		t.Fatalf("%s asked %d times, want once: its refusal stands until the refused retry", refused, n)
	}
	a.Ask(refused, "token")
	if an := nextAnswer(t, a); an.Name != refused {
		t.Fatalf("%s answered, want %s asked with its new form", an.Name, refused)
	}
}
