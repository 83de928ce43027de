package chaos

import (
	"os"
	"strconv"
	"strings"
)

// logLines are the last lines (at most max) of the real clients' logs
// that name a module one of the differences is about: a run that fails
// in CI, where no kept directory can be read afterwards, says what the
// client did with the modules that did not catch up. A difference starts
// with its "<node>.<module>" key or a file path; only keys are looked up.
// A secret never reaches a client's log (the leak scan reads them too).
func logLines(real *rig, differences []string, max int) string {
	var out []string
	for _, d := range differences {
		key, _, ok := strings.Cut(d, ":")
		node, module, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 || strings.Contains(key, "/") {
			continue
		}
		c := real.clients[node]
		if c == nil {
			continue
		}
		raw, err := os.ReadFile(c.logs)
		if err != nil {
			out = append(out, key+": the client's log: "+err.Error())
			continue
		}
		var lines []string
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.Contains(l, `"module":"`+module+`"`) || strings.Contains(l, `"key":"`+key+`"`) ||
				strings.Contains(l, "fill socket") || strings.Contains(l, `"level":"error"`) {
				lines = append(lines, l)
			}
		}
		if len(lines) > max {
			lines = lines[len(lines)-max:]
		}
		out = append(out, key+": the real client's log, its last "+strconv.Itoa(len(lines))+" lines naming it or the fill socket:\n    "+strings.Join(lines, "\n    "))
	}
	return strings.Join(out, "\n  ")
}
