package fill

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Clients' connections kept idle between requests do not hold the cap for
// good: with MaxConns 2, two clients that each filled once keep one idle
// connection each, and a third client's request takes the place of one of
// them (200, not 503); the client whose kept connection was closed sends
// its next request again on a new one. Before, every new connection was
// refused while the kept ones stood: a hundred clients on one socket never
// filled.
func TestAConnectionOverTheCapTakesAnIdleOnesPlace(t *testing.T) {
	root := t.TempDir()
	s := &Server{Root: root, MaxConns: 2}
	base := startServerUndialled(t, s)
	var clients []*Client
	for range 3 {
		clients = append(clients, &Client{Socket: base.Socket})
	}
	fill := func(i, round int) {
		t.Helper()
		path := fmt.Sprintf("/c%d", i)
		content := fmt.Sprintf("client %d round %d\n", i, round)
		_, err := clients[i].Fill(context.Background(), Request{Module: fmt.Sprintf("m%d", i), Whole: true,
			Files: []File{{Path: path, Form: "owned", Content: []byte(content)}}})
		if err != nil {
			t.Fatalf("client %d, round %d: %v", i, round, err)
		}
		if b, err := os.ReadFile(filepath.Join(root, path)); err != nil || string(b) != content {
			t.Fatalf("client %d, round %d: %q, %v", i, round, b, err)
		}
	}
	for round := range 3 {
		for i := range clients {
			fill(i, round)
		}
	}
	if n := s.connsHeld.Load(); n > 2 {
		t.Errorf("%d connections held, over the cap of 2", n)
	}
}
