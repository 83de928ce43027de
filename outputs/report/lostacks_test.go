package report

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Acks lost (as with a connection, or a stream without a leader after a
// whole cluster restarted): the items of many modules wait one ackWait
// together, each module's error says so, and the next call writes them.
// Before, each module waited its own ackWait in turn, holding the daemon's
// loop for 10 s per module (chaos seed 342810).
func TestItemsWhoseAcksAreLostWaitOneAckWaitForAllModules(t *testing.T) {
	b, acksBack := newBusWithoutAcks(t, collectBucket)
	ctx := context.Background()
	const modules = 30
	items := map[string]map[string][]byte{}
	for i := range modules {
		items[fmt.Sprintf("m%02d", i)] = map[string][]byte{"hosts": []byte(fmt.Sprintf("item %d", i))}
	}
	start := time.Now()
	errs := b.pub.ItemsAll(ctx, items)
	took := time.Since(start)
	if len(errs) != modules {
		t.Errorf("%d modules' errors, want all %d: %v", len(errs), modules, errs)
	}
	// One ackWait, not one per module (30 × 200 ms = 6 s): a bound a
	// tenth of that leaves room for a loaded machine.
	if limit := modules * ackWait / 10; took > limit {
		t.Errorf("ItemsAll took %v with every ack lost, over %v: the modules waited in turn", took, limit)
	}

	acksBack()
	if errs := b.pub.ItemsAll(ctx, items); len(errs) != 0 {
		t.Fatalf("once acks come back: %v", errs)
	}
}
