package report

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A sweep deletes this node's keys of modules gone in the three buckets
// (an applied one by a removed report), adopts a live module's keys so
// that its next sync deletes what it no longer wants and puts nothing it
// already has, deletes this node's keys out of shape (they belong to no
// module), and leaves other nodes' keys.
func TestSweepDeletesWhatNoLiveModuleOwnsAndAdoptsTheRest(t *testing.T) {
	b := newBus(t, needsBucket, collectBucket, appliedBucket)
	ctx := context.Background()
	web := `{"collection":"hosts","contributor":"web","item":"10.0.0.1 web"}`
	b.put(collectBucket, "n1.hosts.web", web)
	b.put(collectBucket, "n1.hosts.gone", `{"collection":"hosts","contributor":"gone","item":"x"}`)
	b.put(collectBucket, "n2.hosts.gone", `{"collection":"hosts","contributor":"gone","item":"y"}`)
	b.put(collectBucket, "n1.out=of=shape.x", `{}`)
	need := Need{Node: "n1", Module: "web", Kind: "config", Name: "model", State: "met"}
	nb, _ := json.Marshal(need)
	b.put(needsBucket, "n1.web.config.model", string(nb))
	b.put(needsBucket, "n1.web.config.dropped", `{"node":"n1","module":"web","kind":"config","name":"dropped","state":"met"}`)
	b.put(needsBucket, "n1.gone.config.x", `{}`)
	b.put(needsBucket, "n2.gone.config.x", `{}`)
	b.put(appliedBucket, "n1.web", `{"state":"applied"}`)
	b.put(appliedBucket, "n1.gone", `{"state":"applied"}`)
	b.put(appliedBucket, "n2.gone", `{"state":"applied"}`)
	_, webRev := b.get(collectBucket, "n1.hosts.web")
	_, modelRev := b.get(needsBucket, "n1.web.config.model")
	events := b.subscribe("prov.applied.n1.>")

	sw, err := b.pub.Sweep(ctx, func(m string) bool { return m == "web" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sw.Gone, []string{"gone"}) || !slices.Equal(sw.Adopted, []string{"web"}) || sw.Deleted != 4 {
		t.Fatalf("swept %+v, want gone's 3 keys and the key out of shape deleted and web adopted", sw)
	}
	for bucket, want := range map[string][]string{
		collectBucket: {"n1.hosts.web", "n2.hosts.gone"},
		needsBucket:   {"n1.web.config.model", "n1.web.config.dropped", "n2.gone.config.x"},
		appliedBucket: {"n1.web", "n2.gone"},
	} {
		if got := b.keys(bucket); !sameSet(got, want) {
			t.Errorf("%s: keys %v, want %v", bucket, got, want)
		}
	}
	var r Report
	if m := b.next(events); m.Subject != "prov.applied.n1.gone" || json.Unmarshal(m.Data, &r) != nil || r.State != "removed" {
		t.Fatalf("event %s %s, want gone removed", m.Subject, m.Data)
	}
	b.none(events)

	// Adopted: the next syncs put nothing already there and delete what
	// the module no longer names.
	if err := b.pub.Needs(ctx, "web", []Need{need}); err != nil {
		t.Fatal(err)
	}
	if err := b.pub.Items(ctx, "web", map[string][]byte{"hosts": []byte("10.0.0.1 web")}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(collectBucket, "n1.hosts.web"); rev != webRev {
		t.Errorf("an item already on the bus was put again (revision %d → %d)", webRev, rev)
	}
	if _, rev := b.get(needsBucket, "n1.web.config.model"); rev != modelRev {
		t.Errorf("a need already on the bus was put again (revision %d → %d)", modelRev, rev)
	}
	if _, rev := b.get(needsBucket, "n1.web.config.dropped"); rev != 0 {
		t.Error("a need whose placeholder was dropped is kept")
	}
	if err := b.pub.Items(ctx, "web", map[string][]byte{}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(collectBucket, "n1.hosts.web"); rev != 0 {
		t.Error("an item the module no longer contributes was kept")
	}
}

// A bucket not there fails the sweep (to be tried again) but the others
// are swept.
func TestSweepWithABucketMissingFailsAndSweepsTheOthers(t *testing.T) {
	b := newBus(t, collectBucket, appliedBucket)
	b.put(collectBucket, "n1.hosts.gone", `{}`)
	sw, err := b.pub.Sweep(context.Background(), func(string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), needsBucket) {
		t.Fatalf("no error naming %s with it missing: %v", needsBucket, err)
	}
	if sw.Deleted != 1 || len(b.keys(collectBucket)) != 0 {
		t.Fatalf("swept %+v, keys %v: want the collect bucket swept", sw, b.keys(collectBucket))
	}
}

// A module the sweep found dead and deleted the needs of, which then comes
// back with the same needs as it last synced, has them written again: the
// sweep forgets that they were in sync.
func TestAModuleSweptAndBackWithTheSameNeedsHasThemWrittenAgain(t *testing.T) {
	b := newBus(t, needsBucket, collectBucket, appliedBucket)
	ctx := context.Background()
	need := Need{Node: "n1", Module: "web", Kind: "config", Name: "model", State: "met"}
	if err := b.pub.Needs(ctx, "web", []Need{need}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pub.Sweep(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(needsBucket); len(got) != 0 {
		t.Fatalf("after the sweep: %v", got)
	}
	if err := b.pub.Needs(ctx, "web", []Need{need}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(needsBucket); !sameSet(got, []string{"n1.web.config.model"}) {
		t.Fatalf("the module back with the same needs: keys %v", got)
	}
}
