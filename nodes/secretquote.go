package nodes

import (
	"bytes"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
)

// minQuotedLine is the shortest line of a secret's value that QuotesSecret
// looks for alone: a PEM key's body lines are 64 bytes, and a program that
// reads the key may print one; a short line is no secret and stands in
// much text. A PEM armour line ("-----BEGIN …", "-----END …") is every
// key's and is not looked for.
const minQuotedLine = 16

// minQuotedValue is the shortest value (spaces around it aside) looked for
// whole: a value of fewer bytes stands in almost any text, and is no
// secret.
const minQuotedValue = 4

// QuotesSecret says whether text holds the value of a secret this client
// holds (a vault name's value, a consumers list's credentials), whole
// (minQuotedValue bytes or more) or any of its lines of minQuotedLine
// bytes or more. Text from outside the
// client (the node-engine's error, which may carry a program's last
// words) is not said when it does (outputs/stage failure.go): a program
// may print what it read, from any file of the node. Only exact bytes are
// looked for, not encodings of them.
func (m *NodeGraph) QuotesSecret(text string) bool {
	for _, s := range m.secrets {
		if s.state != graph.Ready || len(s.value) == 0 {
			continue
		}
		if v := bytes.TrimSpace(s.value); len(v) >= minQuotedValue && strings.Contains(text, string(v)) {
			return true
		}
		for line := range bytes.Lines(s.value) {
			line = bytes.TrimSpace(line)
			if len(line) >= minQuotedLine && !bytes.HasPrefix(line, []byte("-----")) && strings.Contains(text, string(line)) {
				return true
			}
		}
	}
	return false
}
