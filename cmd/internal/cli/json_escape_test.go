package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// --log-format json is the default, and what an operator reads with
// journalctl -f, kubectl logs or tail -f. zerolog escapes the C0 controls
// and DEL in a string, but writes the C1 controls (U+009B is a CSI: a
// terminal reading UTF-8 clears the screen or recolours the line on it)
// and format runes such as a bidi override (U+202E reverses what follows)
// raw: a provider's or the vault's reason, a module's name in a key, drove
// the terminal of whoever read the log. Every rune that is not printable
// is written as a \u escape, which JSON reads as the same rune: a program
// parsing the line gets the very strings that were logged.
func TestAJSONLogLineHoldsNoRawC1ControlOrBidiOverride(t *testing.T) {
	var buf bytes.Buffer
	log, err := Logger(&buf, "json", "info", "test")
	if err != nil {
		t.Fatal(err)
	}
	bad := "a\u009b2J\u202eb\u0085c\U000e0001d\x7fe\x1bf"
	log.Info().Str("reason", bad).Strs("modules", []string{bad}).
		Interface("waiting", []map[string]string{{"name": bad}}).AnErr("why", errors.New(bad)).Msg("module waiting")
	line := buf.String()
	for _, r := range []string{"\u009b", "\u202e", "\u0085", "\U000e0001", "\x7f", "\x1b"} {
		if strings.Contains(line, r) {
			t.Errorf("the line holds %q raw:\n%q", r, line)
		}
	}
	if !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 {
		t.Errorf("not one JSON line: %q", line)
	}
	var e struct {
		Reason  string              `json:"reason"`
		Modules []string            `json:"modules"`
		Waiting []map[string]string `json:"waiting"`
		Why     string              `json:"why"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("the line is not JSON: %v\n%q", err, line)
	}
	if e.Reason != bad || len(e.Modules) != 1 || e.Modules[0] != bad || len(e.Waiting) != 1 || e.Waiting[0]["name"] != bad || e.Why != bad {
		t.Errorf("the line read back is not what was logged: %+v", e)
	}
}
