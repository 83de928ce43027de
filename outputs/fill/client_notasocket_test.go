package fill

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestASocketPathHoldingNoSocketIsSaidSo: a --fill-socket naming a
// regular file or a directory (a mistyped flag, a file left where the
// socket goes) fails the request saying what is there, not only the
// kernel's "connection refused", which reads as mesh-fill being down.
func TestASocketPathHoldingNoSocketIsSaidSo(t *testing.T) {
	dir := socketDir(t)
	file, sub := filepath.Join(dir, "file"), filepath.Join(dir, "dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sock, what string }{{file, "a file"}, {sub, "a directory"}} {
		c := &Client{Socket: tc.sock, Timeout: 2 * time.Second}
		_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{{Path: "/x", Form: FormOwned, Content: []byte("v")}}})
		if err == nil {
			t.Fatal("no error")
		}
		want := "fill socket " + tc.sock + ": not answering: dial unix " + tc.sock + ": connect: connection refused (" + tc.what + " is there, not a socket: name mesh-fill's --socket)"
		if err.Error() != want {
			t.Errorf("error %q,\nwant %q", err, want)
		}
	}
}
