package fill

import "sync"

// pathLocks lets requests run at once unless they share a path. A request
// takes all its paths together or waits, so two requests never deadlock.
type pathLocks struct {
	mu   sync.Mutex
	cond *sync.Cond
	held map[string]bool
}

func (l *pathLocks) lock(paths []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
		l.held = map[string]bool{}
	}
	for l.anyHeld(paths) {
		l.cond.Wait()
	}
	for _, p := range paths {
		l.held[p] = true
	}
}

func (l *pathLocks) unlock(paths []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range paths {
		delete(l.held, p)
	}
	l.cond.Broadcast()
}

func (l *pathLocks) anyHeld(paths []string) bool {
	for _, p := range paths {
		if l.held[p] {
			return true
		}
	}
	return false
}
