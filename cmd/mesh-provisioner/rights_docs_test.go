package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The nsc commands README.md and examples/README.md show are what `rights
// --format nsc` prints: every flag they name on an `nsc add user` line is
// one the command prints for some role. Both said the client's user is
// made with --allow-pub-response (allow_responses), which no role holds
// (nodes/spec answersWhy: it would let an answerer publish on any
// subject a request names); an operator adding it by hand, as shown, gave
// the client that right.
func TestTheREADMEsNscCommandsAreWhatRightsPrints(t *testing.T) {
	printed := map[string]bool{}
	for _, args := range [][]string{
		{"--role", "client", "--node", "ace", "--provider", "gitea"}, {"--role", "toolrunner", "--node", "ace"},
		{"--role", "server"}, {"--role", "vault"}, {"--role", "controller"}, {"--role", "mesh-config"},
		{"--role", "provider", "--provider", "gitea"}, {"--role", "operator"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"rights", "--format", "nsc"}, args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		for _, f := range flagRE.FindAllString(stdout.String(), -1) {
			printed[f] = true
		}
	}
	for _, doc := range []string{"../../README.md", "../../examples/README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "nsc add user") {
				continue
			}
			for _, f := range flagRE.FindAllString(line, -1) {
				if !printed[f] {
					t.Errorf("%s shows %s on an nsc add user line, which rights --format nsc prints for no role:\n%s", doc, f, line)
				}
			}
		}
	}
}

var flagRE = regexp.MustCompile(`--[a-z][a-z-]*`)
