package main

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// An operator's first sweep, with no bus where --nats points (or none
// given, and none on the default 127.0.0.1:4222): the error says what is
// wrong and what to do, not only nats.go's "no servers available".
func TestSweepNoBusSaysWhatToDo(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", bustest.FreePort(t))
	code, out, errs := runSweep("--nats", url)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 2 and nothing on stdout", code, out)
	}
	for _, want := range []string{url, "nothing answers there", "--nats"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q: want it to say %q", errs, want)
		}
	}
}

// TestSweepAtAPortThatIsNoBusSaysSo: --nats given the bus's monitoring
// port (HTTP: it waits for a request and says nothing), or a service that
// hangs up at once, is not "nothing answers there" and not nats.go's bare
// "i/o timeout" or "EOF": something answered that is no NATS server, and
// the error says to give the bus's client port.
func TestSweepAtAPortThatIsNoBusSaysSo(t *testing.T) {
	s := bustest.Start(t, func(o *server.Options) { o.HTTPHost, o.HTTPPort = "127.0.0.1", -1 })
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, url := range []string{"nats://" + s.MonitorAddr().String(), "nats://" + hangup.Addr().String()} {
		code, out, errs := runSweep("--nats", url)
		want := "(something there took the connection but did not greet as a NATS server: give --nats the bus's client port (4222 unless set otherwise), not its monitoring port or another service's)"
		if code != 2 || out != "" || !strings.Contains(errs, "connecting to "+url+": ") || !strings.HasSuffix(errs, want+"\n") {
			t.Errorf("--nats %s: exit %d, stdout %q, stderr %q; want 2 and an error ending %q", url, code, out, errs, want)
		}
	}
}
