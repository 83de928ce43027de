package fill

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRequestsSharingAPathTakeTurnsAndOthersRunAtOnce(t *testing.T) {
	var l pathLocks
	var inA atomic.Int32
	var overlapped atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.lock([]string{"/etc/a", "/etc/b"})
			if inA.Add(1) > 1 {
				overlapped.Store(true)
			}
			time.Sleep(5 * time.Millisecond)
			inA.Add(-1)
			l.unlock([]string{"/etc/a", "/etc/b"})
		}()
	}
	l.lock([]string{"/etc/c"}) // a path nobody else holds is taken at once
	l.unlock([]string{"/etc/c"})
	wg.Wait()
	if overlapped.Load() {
		t.Fatal("two requests held /etc/a at once")
	}
}
