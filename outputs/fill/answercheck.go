package fill

import (
	"fmt"
	"strings"
)

// checkAnswer refuses a 200 that does not say, of each file req sent, one
// of SPEC §4.3's actions with a digest of the file: an outside audit's
// node-engine answered an action that was the file's content, secret and
// all, and the client put it in the module's report and event as it was;
// one that left a file out, or said a file it was sent was removed, was
// taken as the module applied. The error names only what the client sent
// (a path of its request), never a text of the answer.
func checkAnswer(sock string, req Request, resp Response) error {
	sent := make(map[string]bool, len(req.Files))
	for _, f := range req.Files {
		sent[f.Path] = false
	}
	for _, r := range resp.Files {
		_, ours := sent[r.Path]
		switch Canonical(r.Action) {
		case ActionRemoved:
			if ours {
				return fmt.Errorf("fill socket %s: the answer says %s, which the request names, was removed", sock, r.Path)
			}
		case ActionWritten, ActionUnchanged, ActionKept, ActionMerged:
			if !sha256Digest(r.Digest) {
				if ours {
					return fmt.Errorf("fill socket %s: the answer's digest of %s is not sha256:<64 hex digits>", sock, r.Path)
				}
				return fmt.Errorf("fill socket %s: the answer gives a file a digest that is not sha256:<64 hex digits>", sock)
			}
			if ours {
				sent[r.Path] = true
			}
		default:
			if ours {
				return fmt.Errorf("fill socket %s: the answer gives %s an action that is none of written, unchanged, kept, merged, removed", sock, r.Path)
			}
			return fmt.Errorf("fill socket %s: the answer gives a file an action that is none of written, unchanged, kept, merged, removed", sock)
		}
	}
	for _, f := range req.Files {
		if !sent[f.Path] {
			return fmt.Errorf("fill socket %s: the answer does not say what became of %s", sock, f.Path)
		}
	}
	return nil
}

// sha256Digest says whether d is a file's digest as the node-engine says
// it, sha256:<64 lower-case hex digits> (checked per file of every fill:
// by hand, not a regexp).
func sha256Digest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
