package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Under other nodes' steady writes a healthy follower is a few entries
// behind at any instant: it lags only if it has not stored, by one look,
// what was stored at the look before.
func TestAReplicaLagsOnlyIfItHasNotStoredWhatTheLookBeforeSaw(t *testing.T) {
	look := func(last uint64, current bool, lag uint64, offline bool) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{
			State: jetstream.StreamState{LastSeq: last},
			Cluster: &jetstream.ClusterInfo{Leader: "s0", Replicas: []*jetstream.PeerInfo{
				{Name: "s1", Current: true},
				{Name: "s2", Current: current, Lag: lag, Offline: offline},
			}},
		}
	}
	for _, c := range []struct {
		name      string
		prev, now *jetstream.StreamInfo
		lags      bool
	}{
		{"every replica current", nil, look(100, true, 0, false), false},
		{"behind at the first look", nil, look(100, false, 3, false), true},
		{"behind by less than stored since the look before", look(100, false, 3, false), look(110, false, 4, false), false},
		{"behind by more than stored since", look(100, false, 3, false), look(102, false, 3, false), true},
		{"catching up after a restart", look(20040, false, 20021, false), look(20040, false, 15000, false), true},
		{"offline: no consumer is placed on it", nil, look(100, false, 50, true), false},
		{"not clustered", nil, &jetstream.StreamInfo{}, false},
	} {
		if r := laggingReplica(c.prev, c.now, nil); (r != nil) != c.lags {
			t.Errorf("%s: lagging %v, want %v", c.name, r, c.lags)
		}
	}
}

// A member of an R3 cluster started again serves, while it catches up,
// the bucket as it was. A watch started then must not take that for what
// the bucket holds: a client starting would see its modules' assignments
// as they were (a module gone still there, a plan moved still old) or,
// while the member's store is rebuilt, none at all (every module gone:
// its files removed).
func TestAWatchAfterAMemberRestartSnapshotsWhatTheBucketHolds(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	_, js := c.Connect(t)
	ctx := context.Background()
	kv := c.KV(t, js, "assign")
	const modules = 20
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("old"))
	}
	c.MissedByAMember(t, js, "assign", func() {
		for m := range modules - 1 {
			bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("new"))
		}
		bustest.Eventually(t, 30*time.Second, func() error { return kv.Delete(ctx, fmt.Sprintf("ace.m%d", modules-1)) })
	})
	want := "snapshot{"
	for _, m := range []int{0, 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 2, 3, 4, 5, 6, 7, 8, 9} { // sorted by key
		want += fmt.Sprintf("ace.m%d=new ", m)
	}
	want = strings.TrimSuffix(want, " ") + "}"
	// Watches one after another while it catches up, as clients starting
	// then would: each reads through a consumer placed on any member.
	for try := range 30 {
		out := make(chan Update, 1)
		w := NewWatch(js, "assign", "ace.>", out, testLog(t))
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.Run(wctx) }()
		u := next(t, out, 30*time.Second)
		cancel()
		<-done
		if got := describe(u); got != want {
			t.Fatalf("try %d: the first update is %s, want %s", try, got, want)
		}
	}
}
