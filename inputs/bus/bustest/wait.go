package bustest

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// Poll is how often Eventually asks again.
const Poll = 20 * time.Millisecond

// Eventually asks cond every Poll until it returns nil, and fails the test
// with cond's last error when timeout has passed first.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, Poll, cond)
}

// EventuallyEvery is Eventually asking every poll: a benchmark that times
// how soon something happens asks often, so that polling adds little.
func EventuallyEvery(t testing.TB, timeout, poll time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(poll)
	}
}

// Buffer is a bytes.Buffer safe for concurrent writers: a log sink for a
// connection's callbacks and a daemon's goroutines, searched by the test.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
