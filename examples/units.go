package examples

import (
	"fmt"
	"io/fs"
	"strings"
)

// UnitArgs is the command line of an example systemd unit's ExecStart
// (systemd/<unit>), its continuation lines joined, split on spaces, without
// the binary: what the unit hands the command. ${CREDENTIALS_DIRECTORY}
// and the specifier %l are written as systemd would expand them on a
// machine named ace (/run/credentials/<unit>, ace), so the commands' tests
// can parse it with their own flags.
func UnitArgs(unit string) ([]string, error) {
	b, err := fs.ReadFile(Files, "systemd/"+unit)
	if err != nil {
		return nil, err
	}
	var exec strings.Builder
	cont := false
	for _, l := range strings.Split(string(b), "\n") {
		if cont || strings.HasPrefix(l, "ExecStart=") {
			body, more := strings.CutSuffix(strings.TrimSpace(l), "\\")
			exec.WriteString(strings.TrimPrefix(body, "ExecStart=") + " ")
			cont = more
		}
	}
	args := strings.Fields(exec.String())
	if len(args) < 2 {
		return nil, fmt.Errorf("systemd/%s: no ExecStart with a command", unit)
	}
	r := strings.NewReplacer("${CREDENTIALS_DIRECTORY}", "/run/credentials/"+unit, "%l", "ace")
	for i := range args {
		args[i] = r.Replace(args[i])
	}
	return args[1:], nil
}
