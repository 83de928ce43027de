package cli

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// syncBuf is a buffer the logger's goroutine and the test share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A SIGHUP sent to the process is said in the log and does not kill it
// (without IgnoreHangup the test binary would exit 129 here).
func TestASighupIsLoggedAndIgnored(t *testing.T) {
	var out syncBuf
	stop := IgnoreHangup(zerolog.New(&out))
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "SIGHUP: nothing to reload") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the SIGHUP; logged %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
