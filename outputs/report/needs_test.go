package report

import (
	"context"
	"slices"
	"testing"
)

func TestNeedsAreWrittenWhenTheyDifferAndDeletedWhenGone(t *testing.T) {
	b := newBus(t, needsBucket)
	ctx := context.Background()
	db := Need{Node: "n1", Module: "web", Kind: "db", Name: "main", State: "met"}
	tls := Need{Node: "n1", Module: "web", Kind: "vault", Name: "tls.key", State: "waiting", Why: "no answer"}
	const dbKey, tlsKey = "n1.web.db.main", "n1.web.vault.tls=2Ekey"

	if err := b.pub.Needs(ctx, "web", []Need{db, tls}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(needsBucket); !sameSet(got, []string{dbKey, tlsKey}) {
		t.Fatalf("keys %v, want %s and %s", got, dbKey, tlsKey)
	}
	val, dbRev := b.get(needsBucket, dbKey)
	if got := decode[Need](t, val); got != db {
		t.Errorf("%s holds %+v, want %+v", dbKey, got, db)
	}
	// SPEC §5.2's fields, every one, a met need's why empty.
	if want := `{"node":"n1","module":"web","kind":"db","name":"main","state":"met","why":""}`; val != want {
		t.Errorf("%s holds %s, want %s", dbKey, val, want)
	}
	val, tlsRev := b.get(needsBucket, tlsKey)
	if got := decode[Need](t, val); got != tls {
		t.Errorf("%s holds %+v, want %+v", tlsKey, got, tls)
	}

	// The same needs: nothing put.
	if err := b.pub.Needs(ctx, "web", []Need{db, tls}); err != nil {
		t.Fatal(err)
	}
	// One moved: only it is put.
	met := tls
	met.State, met.Why = "met", ""
	if err := b.pub.Needs(ctx, "web", []Need{db, met}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(needsBucket, dbKey); rev != dbRev {
		t.Errorf("%s put again with the same bytes (revision %d → %d)", dbKey, dbRev, rev)
	}
	val, rev := b.get(needsBucket, tlsKey)
	if got := decode[Need](t, val); rev == tlsRev || got != met {
		t.Errorf("%s holds %+v at revision %d (was %d), want %+v", tlsKey, got, rev, tlsRev, met)
	}

	// One gone: deleted.
	if err := b.pub.Needs(ctx, "web", []Need{db}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(needsBucket); !slices.Equal(got, []string{dbKey}) {
		t.Errorf("keys %v, want only %s", got, dbKey)
	}

	// After Forget the same bytes are put again (the bus may have lost them).
	b.pub.Forget()
	if err := b.pub.Needs(ctx, "web", []Need{db}); err != nil {
		t.Fatal(err)
	}
	if _, rev := b.get(needsBucket, dbKey); rev == dbRev {
		t.Errorf("%s not put again after Forget", dbKey)
	}

	// None: every key of the module deleted, another module's kept.
	other := Need{Node: "n1", Module: "api", Kind: "db", Name: "main", State: "failed", Why: "bad"}
	if errs := b.pub.NeedsAll(ctx, map[string][]Need{"api": {other}, "web": nil}); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := b.keys(needsBucket); !slices.Equal(got, []string{"n1.api.db.main"}) {
		t.Errorf("keys %v, want only n1.api.db.main", got)
	}
}

func TestNeedsWithoutBucketFailEachModuleAndAreTriedAgain(t *testing.T) {
	b := newBus(t)
	ctx := context.Background()
	needs := map[string][]Need{
		"web": {{Node: "n1", Module: "web", Kind: "db", Name: "main", State: "met"}},
		"api": {{Node: "n1", Module: "api", Kind: "db", Name: "main", State: "met"}},
	}
	errs := b.pub.NeedsAll(ctx, needs)
	if errs["web"] == nil || errs["api"] == nil {
		t.Fatalf("errors %v: want one for each module", errs)
	}
	b.bucket(needsBucket)
	if errs := b.pub.NeedsAll(ctx, needs); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := b.keys(needsBucket); !sameSet(got, []string{"n1.web.db.main", "n1.api.db.main"}) {
		t.Errorf("keys %v after the bucket came", got)
	}
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// A module whose needs are all deleted (it left) leaves nothing behind in
// the publisher: a client churning modules for months keeps no entry per
// module gone. Its needs, back, are written again.
func TestNeedsOfModulesGoneAreNotRemembered(t *testing.T) {
	b := newBus(t, needsBucket)
	ctx := context.Background()
	for i := range 50 {
		mod := "m" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		n := Need{Node: "n1", Module: mod, Kind: "db", Name: "main", State: "met"}
		if err := b.pub.Needs(ctx, mod, []Need{n}); err != nil {
			t.Fatal(err)
		}
		if err := b.pub.Needs(ctx, mod, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.pub.mu.Lock()
	synced, written := len(b.pub.needsSynced), len(b.pub.written[needsBucket])
	b.pub.mu.Unlock()
	if synced != 0 || written != 0 {
		t.Errorf("after 50 modules came and went the publisher keeps %d needs sums and %d tables", synced, written)
	}
	if got := b.keys(needsBucket); len(got) != 0 {
		t.Errorf("keys left: %v", got)
	}
	back := Need{Node: "n1", Module: "maa", Kind: "db", Name: "main", State: "met"}
	if err := b.pub.Needs(ctx, "maa", []Need{back}); err != nil {
		t.Fatal(err)
	}
	if got := b.keys(needsBucket); !slices.Equal(got, []string{"n1.maa.db.main"}) {
		t.Errorf("keys %v after the module came back, want n1.maa.db.main", got)
	}
}
