package bustest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// DeliverOn has a push consumer of stream, made by as, deliver the message
// at subject key on subject to (in queue group, if not empty): what any
// user that may read a bucket can do, nats-server checking no deliver
// subject against its creator's rights. Nobody acks, so it is delivered
// again each second, three times at most. DeliverOn returns once the
// first delivery is made, which admin (a user that may read the
// consumer's info) is asked.
func DeliverOn(t testing.TB, as, admin *nats.Conn, stream, key, to, group string) {
	t.Helper()
	cfg := map[string]any{"name": "spoof", "deliver_subject": to, "filter_subject": key,
		"ack_policy": "explicit", "deliver_policy": "all", "max_deliver": 3, "ack_wait": int64(time.Second)}
	if group != "" {
		cfg["deliver_group"] = group
	}
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": cfg})
	r, err := as.Request("$JS.API.CONSUMER.CREATE."+stream+".spoof."+key, body, 10*time.Second)
	if err != nil || strings.Contains(string(r.Data), `"error"`) {
		t.Fatalf("making a consumer deliver %s on %s: %v %v", key, to, err, r)
	}
	Eventually(t, 30*time.Second, func() error {
		r, err := admin.Request("$JS.API.CONSUMER.INFO."+stream+".spoof", nil, 5*time.Second)
		if err != nil {
			return err
		}
		var info struct {
			Delivered struct {
				Consumer uint64 `json:"consumer_seq"`
			} `json:"delivered"`
		}
		_ = json.Unmarshal(r.Data, &info)
		if info.Delivered.Consumer == 0 {
			return fmt.Errorf("nothing delivered yet: %s", r.Data)
		}
		return nil
	})
}

// AckTap gathers what is published on $JS.ACK.>, where an answer to a
// consumer's delivery goes; it returns what was gathered so far.
func AckTap(t testing.TB, nc *nats.Conn) func() []string {
	t.Helper()
	var mu sync.Mutex
	var acks []string
	tap, err := nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) {
		mu.Lock()
		acks = append(acks, string(m.Data))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tap.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), acks...)
	}
}

// Tap records every message nc may read but those skip leaves out (nil:
// none), a line each: subject, reply, header, data. It returns what was
// recorded by then (nc flushed first, so what the server had sent is in).
func Tap(t testing.TB, nc *nats.Conn, skip func(*nats.Msg) bool) func() string {
	t.Helper()
	var mu sync.Mutex
	var b strings.Builder
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		if skip != nil && skip(m) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&b, "%s %s %v %s\n", m.Subject, m.Reply, m.Header, m.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() string {
		_ = nc.Flush()
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}
}
