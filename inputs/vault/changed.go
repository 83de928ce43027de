package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A secret-changed event out of shape is warned of at most changedWarnBurst
// times a changedWarnEvery: a vault gone wrong may send thousands a second,
// and the log is the operator's, not the vault's. The first warning after
// some were not logged says how many (not_logged_before).
const (
	changedWarnBurst = 10
	changedWarnEvery = time.Minute
)

// WatchChanged calls fn with the vault name of every secret the vault says
// changed on mesh-vault.secret-changed. A payload out of shape (SPEC §2.3:
// {"secret": "<vault name>"}; not JSON, not an object, no "secret", one
// not a string or empty) is ignored with a warning on log that says what
// was wrong and the payload's length, never its bytes: a vault gone wrong
// may have put a value there. Other fields are ignored (a later vault may
// add some). Warnings are rate-limited (changedWarnBurst a
// changedWarnEvery). A message a JetStream push consumer delivered there
// (its subject is the stream's, not the event's: any client may point a
// consumer's deliver subject at it), or a stream republished there (it
// carries Nats-Stream), is ignored with a warning too. fn runs
// on the subscription's goroutine.
func WatchChanged(nc *nats.Conn, log zerolog.Logger, fn func(secret string)) (*nats.Subscription, error) {
	return watchChanged(nc, log, &warnLimit{burst: changedWarnBurst, every: changedWarnEvery, now: time.Now}, fn)
}

func watchChanged(nc *nats.Conn, log zerolog.Logger, lim *warnLimit, fn func(secret string)) (*nats.Subscription, error) {
	if nc == nil || fn == nil {
		return nil, errors.New("watching " + spec.VaultChangedSubject + ": no connection or no callback")
	}
	sub, err := nc.Subscribe(spec.VaultChangedSubject, func(m *nats.Msg) {
		name, problem := changedName(m.Data)
		if m.Subject != spec.VaultChangedSubject {
			// A JetStream push consumer's delivery keeps the stream's
			// subject: any client may make one deliver a value it wrote
			// here (nats-server checks no deliver subject against its
			// creator's rights). It is no event of the vault's.
			name, problem = "", "it was delivered by a JetStream consumer (subject "+spec.Cut(m.Subject, 200)+"), not published by the vault"
		} else if st := m.Header.Get(jetstream.StreamHeader); st != "" {
			// A stream's republish keeps the subject but says the stream.
			name, problem = "", "it was republished by stream "+spec.Cut(st, 200)+", not published by the vault"
		}
		if problem == "" {
			fn(name)
			return
		}
		if ok, dropped := lim.allow(); ok {
			ev := log.Warn().Str("subject", spec.VaultChangedSubject).Str("problem", problem).Int("bytes", len(m.Data))
			if dropped > 0 {
				ev = ev.Int("not_logged_before", dropped)
			}
			ev.Msg("a vault secret-changed event out of shape: ignored")
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing %s: %w", spec.VaultChangedSubject, err)
	}
	return sub, nil
}

// changedName is the vault name a secret-changed payload names, or what is
// wrong with it (in words that quote none of its bytes).
func changedName(data []byte) (name, problem string) {
	if !json.Valid(data) {
		return "", "the payload is not JSON"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return "", "the payload is JSON but not a JSON object"
	}
	raw := bytes.TrimSpace(fields["secret"])
	if len(raw) == 0 || string(raw) == "null" {
		return "", `the payload has no "secret" field`
	}
	if raw[0] != '"' {
		return "", fmt.Sprintf(`"secret" is a %s, not a string`, jsonKind(raw[0]))
	}
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", `"secret" is not a string` // not reached: data is valid JSON
	}
	if name == "" {
		return "", `"secret" is empty`
	}
	return name, ""
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(b byte) string {
	switch b {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}

// warnLimit lets burst warnings through every `every`, and counts those it
// holds back. Safe for concurrent use.
type warnLimit struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	start   time.Time // the current period began
	n       int       // warnings let through in it
	dropped int       // held back since the last let through
}

// allow says whether a warning may be logged now and, when it may, how
// many were held back before it.
func (l *warnLimit) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); l.start.IsZero() || now.Sub(l.start) >= l.every {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.dropped++
		return false, 0
	}
	l.n++
	dropped := l.dropped
	l.dropped = 0
	return true, dropped
}
