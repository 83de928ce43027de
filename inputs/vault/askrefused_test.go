package vault

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
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

// A refusal answering an ask of a name given to AskRefused while the ask
// was under way is not taken: the name is asked again at once.
func TestARefusalOfAnAskUnderWayWhenItsNameWasGivenIsNotTaken(t *testing.T) {
	name := "pair/gitea/gitea-read/g14/cc"
	a, v := startAsker(t, map[string][]string{name: {StatusRefused, StatusSealed}}, time.Hour)
	release := v.holdAnswers()
	a.Ask(name, "")
	bustest.Eventually(t, 5*time.Second, func() error {
		if len(v.times(name)) == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	})
	a.AskRefused([]string{name}) // the consumer's assignment written while the ask is under way
	release()
	if an := nextAnswer(t, a); an.Result.Outcome != Sealed {
		t.Fatalf("first answer taken: %v, want the refusal of the ask made before the write dropped and sealed", an.Result)
	}
	if n := len(v.times(name)); n != 2 {
		t.Fatalf("asked %d times, want 2", n)
	}
}
