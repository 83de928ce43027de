package fill

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestOnlyAFileChangedOnDiskIsLoggedAtInfo: the client sends every file
// of every module again at each refill (every minute); a file written or
// merged is an info line "file filled", one found as it should be
// (unchanged, or a seed kept) a debug line. Before, each was an info line
// at each refill: a node of 10,000 files logged 10,000 lines a minute
// saying nothing happened, burying the changes.
func TestOnlyAFileChangedOnDiskIsLoggedAtInfo(t *testing.T) {
	var log lockedLog
	c := serveOn(t, &Server{Root: t.TempDir(), Log: zerolog.New(&log).Level(zerolog.InfoLevel)})
	req := func(content string) Request {
		return Request{Module: "m", Files: []File{
			{Path: "/etc/owned.conf", Form: FormOwned, Content: []byte(content)},
			{Path: "/etc/keys.conf", Form: FormManagedKeys, Content: []byte("a=" + content)},
			{Path: "/etc/seed.conf", Form: FormSeed, Content: []byte(content)},
		}}
	}
	fillOK(t, c, req("1\n")) // written, written, written
	for range 3 {
		fillOK(t, c, req("1\n")) // unchanged, unchanged, kept
	}
	fillOK(t, c, req("2\n")) // written, merged, kept
	var said []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, `"file filled"`) {
			for _, a := range []string{ActionWritten, ActionMerged, ActionUnchanged, ActionKept} {
				if strings.Contains(line, `"action":"`+a+`"`) {
					said = append(said, a)
				}
			}
		}
	}
	if got, want := strings.Join(said, " "), "written written written written merged"; got != want {
		t.Errorf("info lines \"file filled\": %s; want %s", got, want)
	}
}
