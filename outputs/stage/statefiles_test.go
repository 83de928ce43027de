package stage

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes"
)

// block makes writing p fail until unblock: a directory where the file
// goes (chmod stops no write when the tests run as root).
func block(t *testing.T, p string) (unblock func()) {
	t.Helper()
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// kept-plans.json and removals.json not written (the state dir not
// writable for a moment) are written at the next retry tick after it is
// again, and a restart then has them; the failure is logged once, and the
// tick does not sleep meanwhile.
func TestStateFilesNotWrittenAreWrittenAtTheNextTick(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	dir := t.TempDir()
	keptAt, removalsAt := filepath.Join(dir, "kept-plans.json"), filepath.Join(dir, "removals.json")
	r.s.cfg.KeptPlans, r.s.cfg.Removals = keptAt, removalsAt
	r.s.Sweep(ctx, func(string) bool { return true })

	unblockKept, unblockRemovals := block(t, keptAt), block(t, removalsAt)
	kept := map[string]nodes.KeptPlan{"n1.web": {Provisions: []nodes.KeptBinding{{Provider: "gitea", Provision: "db"}}}}
	r.s.KeepPlans(kept)
	r.s.Remove(ctx, "old") // its DELETE not landed yet: it is to be kept
	for range 3 {
		r.s.Retrying()
	}
	if r.s.AtRest() {
		t.Error("at rest with the state dir's files not written: the retry tick would sleep")
	}
	logged := r.log.String()
	if n := strings.Count(logged, "kept bindings not saved"); n != 1 {
		t.Errorf("the kept bindings' failure logged %d times, want once:\n%s", n, logged)
	}
	if n := strings.Count(logged, "pending removals not saved"); n != 1 {
		t.Errorf("the removals' failure logged %d times, want once:\n%s", n, logged)
	}

	unblockKept()
	unblockRemovals()
	r.s.Retrying() // the tick
	again, err := New(Config{Node: "n1", Log: zerolog.Nop(), KeptPlans: keptAt, Removals: removalsAt})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.KeptPlansBefore(); !reflect.DeepEqual(got, kept) {
		t.Errorf("a restart reads kept plans %+v, want %+v", got, kept)
	}
	if got := again.Removing(); !reflect.DeepEqual(got, []string{"old"}) {
		t.Errorf("a restart reads removals %v, want [old]", got)
	}
	for _, want := range []string{"kept bindings saved", "pending removals saved"} {
		if !strings.Contains(r.log.String(), want) {
			t.Errorf("no %q logged", want)
		}
	}
	r.send(ctx, views{}, nil, false) // the DELETE lands
	if !r.s.AtRest() {
		t.Error("not at rest once everything is written")
	}
}
