package fill

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A request whose client has gone before it was applied (killed while
// mesh-fill waited for the module's lock, or slow to read it) is not
// applied: its client, started again, sends what it wants, and may have
// sent a DELETE since that was applied first, whose files the stale
// request would bring back for a module no longer on the node, for good
// (chaos seed 59421: a client killed with a fill in flight, started
// again, its module taken off; the old fill landed after the DELETE).
func TestARequestWhoseClientHasGoneIsNotApplied(t *testing.T) {
	root := t.TempDir()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var first atomic.Bool
	s := &Server{Root: root, OnRequest: func(r Request) {
		if r.Module == "stale" && first.CompareAndSwap(false, true) {
			arrived <- struct{}{}
			<-release
		}
	}}
	c := startServer(t, s)
	body, _ := json.Marshal(Request{Module: "stale", Whole: true, Files: []File{{Path: "/etc/stale.conf", Form: FormOwned, Content: []byte("old\n")}}})
	nc, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", FillPath, len(body), body)
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not arrive")
	}
	nc.Close()              // the client is gone
	time.Sleep(time.Second) // for the server to see it close (a peer's close is seen at once; this is room for a loaded machine)
	close(release)
	// the next request of another module is answered: the stale one is done by then or never applies
	fillOK(t, c, Request{Module: "other", Whole: true, Files: []File{{Path: "/etc/other.conf", Form: FormOwned, Content: []byte("x\n")}}})
	time.Sleep(100 * time.Millisecond)
	mustAbsent(t, filepath.Join(root, "etc/stale.conf"))
	// and the module is not held: a live client's request of it is applied
	fillOK(t, c, Request{Module: "stale", Whole: true, Files: []File{{Path: "/etc/stale.conf", Form: FormOwned, Content: []byte("new\n")}}})
	mustRead(t, filepath.Join(root, "etc/stale.conf"), "new\n")
}
