package devvault

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A request the vault is slow to answer (its rights check waiting on the
// bus) does not hold the others: they are answered while it is under way,
// and Stop waits for it, so no reply leaves once Stop has returned.
func TestASlowAnswerDoesNotHoldTheOthers(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	serving = func(secret string) {
		if secret == "own/m/slow" {
			close(started)
			<-release
		}
	}
	t.Cleanup(func() { serving = nil })
	srv := bustest.Start(t)
	v := New(zerolog.Nop())
	if err := v.Start(bustest.Connect(t, srv), nil); err != nil {
		t.Fatal(err)
	}
	nc := bustest.Connect(t, srv)
	// Named for another node than the subject's: refused at once, no
	// bucket needed.
	ask := func(secret string) string {
		msg, err := nc.Request("mesh-vault.get.provisioner.ace", []byte(`{"secret":"`+secret+`","node":"other","module":"m","public_key":""}`), 2*time.Second)
		if err != nil {
			return err.Error()
		}
		return string(msg.Data)
	}
	slow := make(chan string, 1)
	go func() { slow <- ask("own/m/slow") }()
	<-started
	if got := ask("own/m/fast"); got == "" || !strings.Contains(got, `"status":"refused"`) {
		t.Fatalf("a request while another is under way: %s, want it answered (refused)", got)
	}
	stopped := make(chan struct{})
	go func() { v.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while an answer was under way")
	case <-time.After(100 * time.Millisecond): // Stop must still be waiting; not a timing of the vault
	}
	close(release)
	<-stopped
	if got := <-slow; !strings.Contains(got, `"status":"refused"`) {
		t.Fatalf("the slow request: %s, want its answer", got)
	}
}
