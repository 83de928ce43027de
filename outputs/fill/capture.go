package fill

import (
	"fmt"
	"sync"
)

// captureCap is how much of a program's output is kept at its head and
// at its tail, for the error that names it (the client keeps 200 bytes of
// each end of an error, so the program's last words reach its report).
const captureCap = 256

// capture keeps the first and the last captureCap bytes written to it
// and counts the rest, so a program printing without end costs mesh-fill
// no more than that.
type capture struct {
	mu   sync.Mutex
	head []byte
	tail []byte
	n    int64 // bytes written in all
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	rest := p
	if room := captureCap - len(c.head); room > 0 {
		k := min(room, len(rest))
		c.head = append(c.head, rest[:k]...)
		rest = rest[k:]
	}
	if len(rest) >= captureCap {
		c.tail = append(c.tail[:0], rest[len(rest)-captureCap:]...)
	} else if len(rest) > 0 {
		if drop := len(c.tail) + len(rest) - captureCap; drop > 0 {
			c.tail = append(c.tail[:0], c.tail[drop:]...)
		}
		c.tail = append(c.tail, rest...)
	}
	return len(p), nil
}

// String is the output, whole when it fits head and tail, else its head,
// how many bytes were left out, and its tail.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	left := c.n - int64(len(c.head)) - int64(len(c.tail))
	if left <= 0 {
		return string(c.head) + string(c.tail)
	}
	return fmt.Sprintf("%s… (%d bytes left out) …%s", c.head, left, c.tail)
}
