package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// MaxExpanding is how many archives a Store expands (reads their tar into
// members) at once. Each may take up to 64 MiB expanded (SPEC §4.1)
// from a few hundred KB of gzip: a dozen modules each naming its own bomb,
// expanded together, held the better part of a gigabyte, and a client
// killed for its memory takes every module of its node with it. Reading an
// archive's tar is work on bytes already in memory, never a wait on a
// source, so one in the queue waits for work, not for a ref that blocks.
const MaxExpanding = 2

// errNoSlot is expand's error when ctx ended before a slot was free: the
// archive was not read, so nothing is known wrong with it.
var errNoSlot = errors.New("waiting for other archives to be read first")

// slots is the Store's channel holding a slot for each archive being
// expanded, made at its first use.
func (s *Store) slots() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expanding == nil {
		s.expanding = make(chan struct{}, MaxExpanding)
	}
	return s.expanding
}

// expand is readArchive of r, once a slot is free (ctx ending first: the
// try's timeout, said as the cause).
func (s *Store) expand(ctx context.Context, r io.Reader, lim limits) (map[string][]byte, error) {
	slots := s.slots()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errNoSlot, context.Cause(ctx))
	}
	defer func() { <-slots }()
	return readArchive(r, lim)
}
