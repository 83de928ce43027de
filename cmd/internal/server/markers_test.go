package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// streamMsgs is how many messages bucket b's stream holds.
func streamMsgs(t *testing.T, js jetstream.JetStream, b string) (uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+b)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// TestServerPurgesOldDeleteMarkers: a client deletes its needs, reports
// and items (kv.Delete, a marker each); the server, with the rights the
// examples give it, purges the markers once they are older than
// MarkersKeptFor, at its periodic pass, so each bucket's stream holds its
// live keys again; a younger marker is kept until it is old enough, and a
// key deleted and written again keeps its value.
func TestServerPurgesOldDeleteMarkers(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../../examples/nats/server.conf"))
	login := func(user string) string {
		u, _ := url.Parse(s.ClientURL())
		u.User = url.UserPassword(user, auth.DevPassword(user))
		return u.String()
	}
	var logs bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	const keptFor = 2 * time.Second
	go func() {
		done <- Run(ctx, Config{NATSURL: login("mesh-provisioner"), RegistryEvery: 100 * time.Millisecond,
			MarkersKeptFor: keptFor, PurgeEvery: 300 * time.Millisecond, Log: zerolog.New(&logs)})
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server logged:\n%s", logs.String())
		}
		cancel()
		<-done
	})
	_, lab := bustest.JetStream(t, s, nats.UserInfo("lab", auth.DevPassword("lab")))
	bustest.Eventually(t, 10*time.Second, provisionerBucketsThere(t, lab))

	// The client of node ace, with its own rights, writes and deletes.
	_, client := bustest.JetStream(t, s, nats.UserInfo("provisioner-ace", auth.DevPassword("provisioner-ace")),
		nats.CustomInboxPrefix("_INBOX.provisioner.ace"))
	kvs := map[string]jetstream.KeyValue{}
	for _, b := range markerBuckets {
		kvs[b] = bucket(t, client, b)
	}
	live := map[string][]string{
		spec.NeedsBucket:   {"ace.m1.config.a", "ace.m1.config.b", "ace.m3.config.z"},
		spec.AppliedBucket: {"ace.m1"},
		spec.CollectBucket: {"ace.shell=3Azsh.m1"},
	}
	gone := map[string][]string{
		spec.NeedsBucket:   {"ace.m2.config.x", "ace.m2.config.y", "ace.m3.config.z"},
		spec.AppliedBucket: {"ace.m2"},
		spec.CollectBucket: {"ace.shell=3Azsh.m2"},
	}
	for _, b := range markerBuckets {
		for _, k := range append(live[b], gone[b]...) {
			put(t, kvs[b], k, `{"v":1}`)
		}
		for _, k := range gone[b] {
			if err := kvs[b].Delete(testCtx(t), k); err != nil {
				t.Fatalf("deleting %s %s: %v", b, k, err)
			}
		}
	}
	put(t, kvs[spec.NeedsBucket], "ace.m3.config.z", `{"v":"again"}`) // deleted, then written again
	msgsAre := func(b string, want int) func() error {
		return func() error {
			n, err := streamMsgs(t, lab, b)
			if err == nil && n != uint64(want) {
				err = fmt.Errorf("bucket %s holds %d messages, want %d", b, n, want)
			}
			return err
		}
	}
	// Before: each live key and each marker (z's marker gave way to its
	// new value: History 1).
	for b, n := range map[string]int{spec.NeedsBucket: 3 + 2, spec.AppliedBucket: 1 + 1, spec.CollectBucket: 1 + 1} {
		if err := msgsAre(b, n)(); err != nil {
			t.Fatalf("before the markers are old: %v", err)
		}
	}

	// Old enough: the markers go at a pass, the live keys stay.
	for _, b := range markerBuckets {
		bustest.Eventually(t, keptFor+5*time.Second, msgsAre(b, len(live[b])))
		for _, k := range live[b] {
			e, err := kvs[b].Get(testCtx(t), k)
			if err != nil {
				t.Fatalf("live key %s %s: %v", b, k, err)
			}
			if k == "ace.m3.config.z" && string(e.Value()) != `{"v":"again"}` {
				t.Errorf("key written again holds %s", e.Value())
			}
		}
	}

	// A marker younger than MarkersKeptFor outlasts a purge that began
	// after it was made (the second purge from now), and goes at a later
	// one.
	purges := func() int { return strings.Count(logs.String(), "old delete markers purged") }
	before := purges()
	put(t, kvs[spec.NeedsBucket], "ace.m4.config.w", `{"v":1}`)
	if err := kvs[spec.NeedsBucket].Delete(testCtx(t), "ace.m4.config.w"); err != nil {
		t.Fatal(err)
	}
	made := time.Now()
	bustest.Eventually(t, keptFor, func() error {
		if n := purges(); n < before+2 {
			return fmt.Errorf("%d purges since the young marker was made, want 2", n-before)
		}
		return nil
	})
	if time.Since(made) >= keptFor {
		t.Fatalf("the purges took %v: the marker is no longer young", time.Since(made))
	}
	if err := msgsAre(spec.NeedsBucket, len(live[spec.NeedsBucket])+1)(); err != nil {
		t.Fatalf("the young marker: %v", err)
	}
	bustest.Eventually(t, keptFor+5*time.Second, msgsAre(spec.NeedsBucket, len(live[spec.NeedsBucket])))

	if strings.Contains(logs.String(), "ermission") || strings.Contains(logs.String(), "not all purged") {
		t.Errorf("the server was refused something:\n%s", logs.String())
	}
}

// TestMarkerPurgeSparesAKeyWrittenAgain: a key written again between the
// look that listed its marker and the purge keeps its new value (a purge
// of the key's whole subject, as KeyValue.PurgeDeletes does, loses it).
func TestMarkerPurgeSparesAKeyWrittenAgain(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	ctx := testCtx(t)
	kv := bucket(t, js, spec.NeedsBucket)
	put(t, kv, "ace.m.config.k", `{"v":1}`)
	put(t, kv, "ace.m.config.gone", `{"v":1}`)
	for _, k := range []string{"ace.m.config.k", "ace.m.config.gone"} {
		if err := kv.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := oldMarkers(ctx, kv, time.Now().Add(time.Second))
	if err != nil || len(listed) != 2 {
		t.Fatalf("listed %v (%v), want both markers", listed, err)
	}
	put(t, kv, "ace.m.config.k", `{"v":"again"}`)
	st, err := js.Stream(ctx, "KV_"+spec.NeedsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := purgeListed(ctx, st, spec.NeedsBucket, listed); err != nil || n != 2 {
		t.Fatalf("purged %d (%v)", n, err)
	}
	e, err := kv.Get(ctx, "ace.m.config.k")
	if err != nil || string(e.Value()) != `{"v":"again"}` {
		t.Fatalf("the key written again: %v", err)
	}
	if _, err := kv.Get(ctx, "ace.m.config.gone"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the deleted key: %v", err)
	}
	if n, _ := streamMsgs(t, js, spec.NeedsBucket); n != 1 {
		t.Errorf("the stream holds %d messages, want 1", n)
	}
}

// TestRegistryPurgesAtMostEveryPurgeEvery: the purge runs at the first
// pass and then no more often than purgeEvery, however short the
// registry's interval.
func TestRegistryPurgesAtMostEveryPurgeEvery(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	kv := bucket(t, js, spec.RegistryBucket)
	var mu sync.Mutex
	var purges []time.Time
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loop := registryLoop{kv: kv, every: 50 * time.Millisecond, log: quietLog(), purgeEvery: 600 * time.Millisecond,
		purge: func(context.Context) (map[string]int, error) {
			mu.Lock()
			defer mu.Unlock()
			purges = append(purges, time.Now())
			return nil, nil
		}}
	start := time.Now()
	go func() { loop.run(ctx); close(done) }()
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-done
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(purges) == 0 || purges[0].Sub(start) > time.Second {
		t.Fatalf("no purge at the first pass: %v", purges)
	}
	for i := 1; i < len(purges); i++ {
		if gap := purges[i].Sub(purges[i-1]); gap < 600*time.Millisecond {
			t.Errorf("purges %v apart, want at least 600ms", gap)
		}
	}
	if max := int(took/(600*time.Millisecond)) + 1; len(purges) < 2 || len(purges) > max {
		t.Errorf("%d purges in %v, want 2 to %d", len(purges), took, max)
	}
}
