package vault

import (
	"fmt"
	"testing"
	"time"
)

// Asking says yes while an answer sits in Answers, not taken: the daemon
// settles, and the stage flushes the needs, only once it is taken in.
func TestAskingWhileAnAnswerIsQueuedNotTaken(t *testing.T) {
	name := "own/app/api-key"
	a, _ := startAsker(t, map[string][]string{name: {StatusSealed}}, time.Hour)
	a.Ask(name, "")
	settled(t, a) // answered, and the asker is done with it: its answer is queued
	if n := len(a.Answers()); n != 1 {
		t.Fatalf("%d answers queued, want 1", n)
	}
	if !a.Asking() {
		t.Fatal("Asking() is false with an answer queued and not taken")
	}
	if an := nextAnswer(t, a); an.Name != name || an.Result.Outcome != Sealed {
		t.Fatalf("answer %s %v", an.Name, an.Result)
	}
	if a.Asking() {
		t.Fatal("Asking() is true once every answer was taken")
	}
}

// More answers than Answers holds at once (some wait to be queued): Asking
// stays true until the last one is taken.
func TestAskingUntilTheLastOfManyAnswersIsTaken(t *testing.T) {
	const n = 100
	script := map[string][]string{}
	for i := range n {
		script[fmt.Sprintf("own/m-%d/s", i)] = []string{StatusSealed}
	}
	a, _ := startAsker(t, script, time.Hour)
	held := cap(a.Answers())
	if held >= n {
		t.Fatalf("Answers holds %d: the test needs more names than that", held)
	}
	for name := range script {
		a.Ask(name, "")
	}
	for i := range n - held { // those that could not be queued at once are
		if !a.Asking() {
			t.Fatalf("Asking() is false with %d answers not taken", n-i)
		}
		nextAnswer(t, a)
	}
	settled(t, a) // the asker is done with every name: the rest are queued
	for i := n - held; i < n; i++ {
		if !a.Asking() {
			t.Fatalf("Asking() is false with %d answers queued, not taken", n-i)
		}
		nextAnswer(t, a)
	}
	if a.Asking() {
		t.Fatal("Asking() is true once every answer was taken")
	}
}
