package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Keys a hand put in the registry that are no kind a domain answers, of
// any shape (out of SPEC §2.1's, or a token that is no kind of §4.1):
// each is deleted by the running server within seconds, and no kind of
// the table is written again for it.
func TestRegistryKeysOfNoKindOfAnyShapeAreDeletedByTheRunningServer(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js))
	kv := bucket(t, js, spec.RegistryBucket)
	ctx := testCtx(t)
	revs := map[string]uint64{}
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, e := range Registry() {
			got, err := kv.Get(ctx, e.Kind)
			if err != nil {
				return fmt.Errorf("kind %s: %w", e.Kind, err)
			}
			revs[e.Kind] = got.Revision()
		}
		return nil
	})
	odd := []string{"con=ZZ", "=63onfig", "Config", "con.fig", "my_kind", "con=2Efig"}
	for _, k := range odd {
		put(t, kv, k, `{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`)
	}
	bustest.Eventually(t, 15*time.Second, func() error {
		for _, k := range odd {
			if _, err := kv.Get(ctx, k); err == nil {
				return fmt.Errorf("key %q still there", k)
			}
		}
		return nil
	})
	for kind, rev := range revs {
		if got, err := kv.Get(ctx, kind); err != nil || got.Revision() != rev {
			t.Errorf("kind %s: written again (%v)", kind, err)
		}
	}
}

// The four buckets the server makes (SPEC §2.2) keep one value a key and
// refuse rollups; the registry bucket deleted while the server runs is
// made again so, and the registry is in it again, within seconds.
func TestTheServersBucketsKeepOneValueAndRefuseRollupsAlsoWhenMadeAgain(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js))
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, b := range Buckets {
			st, err := js.Stream(ctx, "KV_"+b)
			if err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
			cfg := st.CachedInfo().Config
			if cfg.MaxMsgsPerSubject != 1 || cfg.AllowRollup || cfg.Replicas != 1 {
				return fmt.Errorf("bucket %s: history %d, rollups %v, replicas %d", b, cfg.MaxMsgsPerSubject, cfg.AllowRollup, cfg.Replicas)
			}
		}
		return nil
	}
	bustest.Eventually(t, 5*time.Second, check)
	if err := js.DeleteKeyValue(testCtx(t), spec.RegistryBucket); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 15*time.Second, provisionerBucketsThere(t, js))
	bustest.Eventually(t, 5*time.Second, check)
	kv := bucket(t, js, spec.RegistryBucket)
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, e := range Registry() {
			if _, err := kv.Get(testCtx(t), e.Kind); err != nil {
				return fmt.Errorf("kind %s: %w", e.Kind, err)
			}
		}
		return nil
	})
}

// A server started again (or a second one beside it) finds the registry
// as the table says and writes nothing: every kind keeps its revision.
func TestAServerStartedAgainRewritesNoKindOfTheRegistry(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{NATSURL: s.ClientURL(), RegistryEvery: time.Hour, Log: quietLog()}) }()
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js))
	kv := bucket(t, js, spec.RegistryBucket)
	revs := map[string]uint64{}
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, e := range Registry() {
			got, err := kv.Get(testCtx(t), e.Kind)
			if err != nil {
				return fmt.Errorf("kind %s: %w", e.Kind, err)
			}
			revs[e.Kind] = got.Revision()
		}
		return nil
	})
	cancel()
	<-done
	st, err := js.Stream(testCtx(t), "KV_"+spec.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	last := st.CachedInfo().State.LastSeq
	runServer(t, s.ClientURL(), 300*time.Millisecond) // passes every 300 ms
	runServer(t, s.ClientURL(), 300*time.Millisecond) // and a second one beside it
	time.Sleep(2 * time.Second)                       // several passes of each
	for kind, rev := range revs {
		if got, err := kv.Get(testCtx(t), kind); err != nil || got.Revision() != rev {
			t.Errorf("kind %s written again (%v)", kind, err)
		}
	}
	if info, err := st.Info(testCtx(t)); err != nil || info.State.LastSeq != last {
		t.Errorf("the registry was written: last sequence %d, was %d (%v)", info.State.LastSeq, last, err)
	}
}
