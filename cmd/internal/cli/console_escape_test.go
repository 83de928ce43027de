package cli

import (
	"bytes"
	"strings"
	"testing"
)

// --log-format console is for people at a terminal. A string field is
// quoted with its control runes escaped, but a list or an object (a
// module's waiting list, the modules a sweep found gone) is printed as
// JSON, which leaves DEL, the C1 controls (U+009B is a CSI) and format
// runes such as a bidi override (U+202E) raw: a placeholder's name in a
// templates archive or a module's name in a key would drive the
// operator's terminal or reorder the line. They are escaped.
func TestAConsoleLogLinePrintsNoControlRuneOfAListOrObjectField(t *testing.T) {
	var buf bytes.Buffer
	log, err := Logger(&buf, "console", "info", "test")
	if err != nil {
		t.Fatal(err)
	}
	bad := "a\u202eb\u009b2J\x7fc"
	log.Info().Interface("waiting", []map[string]string{{"kind": "config", "name": bad}}).
		Strs("modules", []string{bad}).Str("module", bad).Msg("module waiting")
	out := buf.String()
	for _, r := range []string{"\u202e", "\u009b", "\x7f"} {
		if strings.Contains(out, r) {
			t.Errorf("the line holds %q raw:\n%q", r, out)
		}
	}
	if !strings.Contains(out, `\u202e`) || !strings.Contains(out, "modules=") || !strings.Contains(out, "waiting=") {
		t.Errorf("the line does not show the fields, escaped:\n%s", out)
	}
}
