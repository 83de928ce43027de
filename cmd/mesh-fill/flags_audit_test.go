package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestAnEmptySocketIsRefusedNamingTheFlag: `--socket ""` (a unit's
// variable left empty) is refused before anything is read or locked, with
// a message naming the flag, not a bind's "rename .sock-N/s : no such file
// or directory" after the state dir was taken.
func TestAnEmptySocketIsRefusedNamingTheFlag(t *testing.T) {
	state := t.TempDir() + "/state"
	err := run(t.Context(), []string{"serve", "--socket", "", "--state-dir", state}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--socket: empty") {
		t.Fatalf("error %v, want one saying --socket: empty", err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state dir was made before the socket was refused: %v", err)
	}
}
