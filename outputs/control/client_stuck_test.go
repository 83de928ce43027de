package control

import (
	"net"
	"strings"
	"testing"
	"time"
)

// A socket a daemon left behind (killed, so nothing unlinked it) is said
// as a daemon not running, with what to do, as an absent socket is.
func TestASocketLeftBehindSaysToStartTheDaemon(t *testing.T) {
	sock, ln := listenIn(t)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	_, _, err := NewClient(sock, 5*time.Second).Get(t.Context(), "/v1/modules")
	if err == nil || !strings.Contains(err.Error(), "nothing answers on the control socket "+sock) ||
		!strings.Contains(err.Error(), "start it with `mesh-provisioner-client run`") {
		t.Fatalf("err %v", err)
	}
}

// A daemon that takes the connection and never answers (stuck, or a
// socket some other program listens on) is said in the operator's words:
// no HTTP request (`Get "http://control/v1/modules"`), no "context
// deadline exceeded", and where to look.
func TestASocketThatNeverAnswersIsSaidPlainly(t *testing.T) {
	sock, ln := listenIn(t)
	t.Cleanup(func() { ln.Close() })
	go func() { // accept and hold every connection, answering nothing
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	_, _, err := NewClient(sock, 200*time.Millisecond).Get(t.Context(), "/v1/modules")
	if err == nil {
		t.Fatal("an answer from a socket that gives none")
	}
	msg := err.Error()
	for _, bad := range []string{"http://", "Get ", "context deadline exceeded", "Client.Timeout"} {
		if strings.Contains(msg, bad) {
			t.Errorf("err %q says %q", msg, bad)
		}
	}
	if !strings.Contains(msg, "control socket "+sock+" took the request but did not answer within 200ms") || !strings.Contains(msg, "log") {
		t.Errorf("err %q", msg)
	}
}
