package bus

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// CheckURLs refuses a --nats list (comma-separated, as nats.go splits it)
// with an entry that does not parse as a NATS server URL: nats.go would
// only say so once the daemon runs, or keep dialing a host that is no
// host. An entry without "://" is nats:// (as nats.go reads it). The
// client and the server check their --nats with it at start.
func CheckURLs(list string) error {
	n := 0
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		n++
		s := entry
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, and a password in it
		}
		if err != nil {
			return fmt.Errorf("--nats %q is not a URL: %w", RedactURL(s), err)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("--nats %q: scheme %q is not nats, tls, ws or wss", RedactURL(s), u.Scheme)
		}
		if u.Hostname() == "" {
			return fmt.Errorf("--nats %q names no host", RedactURL(s))
		}
	}
	if n == 0 {
		return fmt.Errorf("--nats names no server")
	}
	return nil
}
