package report

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// revisions is each key of bucket with its revision.
func (b *bus) revisions(bucket string) map[string]uint64 {
	b.t.Helper()
	out := map[string]uint64{}
	for _, k := range b.keys(bucket) {
		_, out[k] = b.get(bucket, k)
	}
	return out
}

// A module's needs that shrink: the keys dropped are deleted, and no
// other (not the module's others, not another module's whose name begins
// the same); those kept are not put again. Needs that come back are put,
// only they; after Forget every need is put again.
func TestNeedsDroppedAreDeletedAndNoOthers(t *testing.T) {
	b := newBus(t, needsBucket)
	ctx := context.Background()
	// Names that sort differently encoded and not, and modules one of
	// which begins another's key.
	names := []string{"a", "a.b", "a-b", "ab", "a/b", "b", "é", "z"}
	var web, other []Need
	for _, kind := range []string{"config", "vault", "db"} {
		for _, n := range names {
			web = append(web, Need{Node: "n1", Module: "web", Kind: kind, Name: n, State: "met"})
			other = append(other, Need{Node: "n1", Module: "web.x", Kind: kind, Name: n, State: "waiting", Why: "no value"})
		}
	}
	if errs := b.pub.NeedsAll(ctx, map[string][]Need{"web": web, "web.x": other}); len(errs) != 0 {
		t.Fatal(errs)
	}
	before := b.revisions(needsBucket)
	if len(before) != 2*len(web) {
		t.Fatalf("%d keys, want %d", len(before), 2*len(web))
	}

	var kept, dropped []Need
	for i, n := range web {
		if i%3 == 1 {
			dropped = append(dropped, n)
		} else {
			kept = append(kept, n)
		}
	}
	if err := b.pub.Needs(ctx, "web", kept); err != nil {
		t.Fatal(err)
	}
	after := b.revisions(needsBucket)
	want := maps.Clone(before)
	for _, n := range dropped {
		delete(want, needKeyOf(n))
	}
	if !maps.Equal(after, want) {
		t.Errorf("after dropping %d needs:\n%s", len(dropped), diffRevs(after, want))
	}

	// Back: those put, the rest as they were.
	if err := b.pub.Needs(ctx, "web", web); err != nil {
		t.Fatal(err)
	}
	back := b.revisions(needsBucket)
	for k, rev := range back {
		if was, ok := after[k]; ok && was != rev {
			t.Errorf("%s put again (revision %d → %d)", k, was, rev)
		}
	}
	for _, n := range dropped {
		if _, ok := back[needKeyOf(n)]; !ok {
			t.Errorf("%s not put back", needKeyOf(n))
		}
	}

	// After Forget: every need of web put again, the other module's not.
	b.pub.Forget()
	if err := b.pub.Needs(ctx, "web", web); err != nil {
		t.Fatal(err)
	}
	for k, rev := range b.revisions(needsBucket) {
		if again := rev != back[k]; again != strings.HasPrefix(k, "n1.web.") {
			t.Errorf("%s: put again %v after Forget (revision %d → %d)", k, again, back[k], rev)
		}
	}
}

// needKeyOf is n's key in the needs bucket, as SPEC §4 spells it.
func needKeyOf(n Need) string {
	esc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '/' {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "=%02X", c)
			}
		}
		return b.String()
	}
	return esc(n.Node) + "." + esc(n.Module) + "." + esc(n.Kind) + "." + esc(n.Name)
}

func diffRevs(got, want map[string]uint64) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("  %s kept, want deleted", k))
		} else if w != got[k] {
			out = append(out, fmt.Sprintf("  %s put again (revision %d → %d)", k, w, got[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("  %s deleted, want kept", k))
		}
	}
	return strings.Join(out, "\n")
}

// Items a module no longer contributes are deleted, no other: not its
// others, not another module's of the same collections.
func TestItemsDroppedAreDeletedAndNoOthers(t *testing.T) {
	b := newBus(t, collectBucket)
	ctx := context.Background()
	cs := []string{"h", "h.x", "h-x", "hosts", "hosts2"}
	all := map[string][]byte{}
	for _, c := range cs {
		all[c] = []byte("item of " + c)
	}
	if errs := b.pub.ItemsAll(ctx, map[string]map[string][]byte{"web": all, "we": all}); len(errs) != 0 {
		t.Fatal(errs)
	}
	before := b.revisions(collectBucket)
	some := map[string][]byte{"h.x": all["h.x"], "hosts": all["hosts"]}
	if err := b.pub.Items(ctx, "web", some); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(before)
	for _, k := range []string{"n1.h.web", "n1.h-x.web", "n1.hosts2.web"} {
		delete(want, k)
	}
	if got := b.revisions(collectBucket); !maps.Equal(got, want) {
		t.Errorf("after dropping 3 items:\n%s", diffRevs(got, want))
	}
}

// A need whose why changed where the cut takes out (its middle: Bound
// keeps its start and its end): its fields differ, its bytes do not, so
// it is not put again.
func TestANeedWhoseBytesDidNotChangeIsNotPutAgain(t *testing.T) {
	b := newBus(t, needsBucket)
	ctx := context.Background()
	long := strings.Repeat("x", MaxText)
	n := Need{Node: "n1", Module: "web", Kind: "vault", Name: "x", State: "failed", Why: long + "a" + long}
	if err := b.pub.Needs(ctx, "web", []Need{n}); err != nil {
		t.Fatal(err)
	}
	_, rev := b.get(needsBucket, "n1.web.vault.x")
	n.Why = long + "b" + long
	if err := b.pub.Needs(ctx, "web", []Need{n}); err != nil {
		t.Fatal(err)
	}
	if _, rev2 := b.get(needsBucket, "n1.web.vault.x"); rev2 != rev {
		t.Errorf("put again with the same bytes (revision %d → %d)", rev, rev2)
	}
}
