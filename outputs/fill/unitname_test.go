package fill

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestAUnitNameIsOfSystemdsAlphabet: a unit is a systemd unit name, of
// its letters, digits and ":-_.\@" alone; one holding a shell's
// metacharacter, a quote or a byte not ASCII is refused (400) though
// --allow-unit matches it, and nothing is written or run: the lab's
// --on-change-command is often a shell's (sh -c), and systemctl refuses
// such a name anyway. Names systemd takes, a template's instance and an
// escape included, are run.
func TestAUnitNameIsOfSystemdsAlphabet(t *testing.T) {
	root := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	c := startServer(t, &Server{Root: root, AllowUnits: []string{"*"},
		Command: []string{"sh", "-c", `printf '%s\n' "$2" >> "$0"`, ran}})
	refusedAsNoUnitName(t, c, "$(id).service", "`id`.service", "a;b.service", "a|b.service", "a&b.service",
		"a'b.service", `a"b.service`, "a>b.service", "a$b.service", "ünï.service", "a%b.service")
	mustAbsent(t, filepath.Join(root, "a"))
	mustAbsent(t, ran)

	good := []string{"getty@tty1.service", `sys-x\x2dy.device`, "a:b_c-d.service", "app"}
	for i, unit := range good {
		fillOK(t, c, Request{Module: "m", Files: []File{
			{Path: "/a", Form: FormOwned, Content: []byte{byte(i)}, OnChange: OnChange{Action: OnChangeRestart, Unit: unit}},
		}})
	}
	mustRead(t, ran, strings.Join(good, "\n")+"\n")
}

// refusedAsNoUnitName asks c to fill /a for a program of each unit, and
// checks each is a 400 saying the unit is not a unit name.
func refusedAsNoUnitName(t *testing.T, c *Client, units ...string) {
	t.Helper()
	for _, unit := range units {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
			{Path: "/a", Form: FormOwned, Content: []byte(unit), OnChange: OnChange{Action: OnChangeRestart, Unit: unit}},
		}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, "not a unit name") {
			t.Errorf("%s: want a 400 saying not a unit name, got %v", unit, err)
		}
	}
}
