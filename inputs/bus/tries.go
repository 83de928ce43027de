package bus

import "time"

// A request the bus leaves unanswered is asked again after a short try
// rather than waited out (nats.go's 5 s): a lookup a stream's leader
// answers, or a consumer's making, sent while a crashed member's streams
// or the cluster's meta leader are elected again, or a consumer placed on
// the crashed member, is never answered. Tries of 0.25 s, 0.5 s, then 1 s
// each read within about a second of the new leader (doubling to 4 s left
// a try sent just before the election unanswered until it ran out: 8–9 s
// from the crash, measured), for at most triesFor in all; a healthy bus
// answers in milliseconds.
const (
	tryFirst = 250 * time.Millisecond
	maxTry   = time.Second
	triesFor = 8 * time.Second
)

// nextTry is the bound of the try after one of try.
func nextTry(try time.Duration) time.Duration { return min(2*try, maxTry) }
