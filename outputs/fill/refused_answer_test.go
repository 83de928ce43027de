package fill

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// A peer --allow-uid refuses is answered 403 as its connection is accepted
// and closed unread; the client, whether its request was written before
// the close or met a broken pipe, reads the answer: a 403, never "not
// answering" (which the stage would try again at every tick instead of
// waiting as a refusal).
func TestARefusedPeerReadsItsAnswerEveryTime(t *testing.T) {
	s := &Server{Root: t.TempDir(), AllowUIDs: []int{os.Getuid() + 4242}}
	c := startServerUndialled(t, s)
	body := Request{Module: "web", Files: []File{{Path: "/etc/x", Form: "owned", Content: []byte(strings.Repeat("x", 100<<10))}}}
	for i := range 200 {
		var err error
		if i%2 == 0 {
			_, err = c.Delete(context.Background(), "web")
		} else {
			_, err = c.Fill(context.Background(), body)
		}
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.Status != 403 {
			t.Fatalf("request %d: %v, want the 403", i, err)
		}
	}
}
