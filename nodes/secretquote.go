package nodes

import (
	"bytes"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
)

// minQuotedLine is the fewest bytes of a line of a secret's value that
// QuotesSecret looks for: any run of that many bytes of a line (a program
// that rejects a token may print its first 40 bytes; a PEM key's body
// lines are 64 bytes, and a program that reads the key may print one or
// a part of one); a shorter run stands in much text. A PEM armour line
// ("-----BEGIN …", "-----END …") is every key's and is not looked for.
const minQuotedLine = 16

// minQuotedValue is the shortest value (spaces around it aside) looked for
// whole: a value of fewer bytes stands in almost any text, and is no
// secret.
const minQuotedValue = 4

// QuotesSecret says whether text holds the value of a secret this client
// holds (a vault name's value, a consumers list's credentials), or held
// last before that (files on disk may still hold it: the vault refused
// it since, or a rotation is not filled yet): whole (minQuotedValue bytes
// or more), or any minQuotedLine bytes of one of its lines. Text from
// outside the client (the node-engine's error, which may carry a
// program's last words; the vault's reason for a refusal) is not said
// when it does (outputs/stage failure.go, the daemon's vault.go): a
// program may print what it read, from any file of the node. Only exact
// bytes are looked for, not encodings of them.
func (m *NodeGraph) QuotesSecret(text string) bool {
	var runs map[string]struct{} // text's runs of minQuotedLine bytes, made when first needed
	for _, s := range m.secrets {
		if s.state == graph.Ready && quotes(text, s.value, &runs) || quotes(text, s.before, &runs) {
			return true
		}
	}
	return false
}

// quotes says whether text holds value whole, or a run of minQuotedLine
// bytes of one of its lines; runs holds text's runs, made at the first
// line long enough (QuotesSecret runs on failures alone: a secret of a
// MiB looks up each of its runs once).
func quotes(text string, value []byte, runs *map[string]struct{}) bool {
	if v := bytes.TrimSpace(value); len(v) >= minQuotedValue && strings.Contains(text, string(v)) {
		return true
	}
	if len(text) < minQuotedLine {
		return false
	}
	for line := range bytes.Lines(value) {
		line = bytes.TrimSpace(line)
		if len(line) < minQuotedLine || bytes.HasPrefix(line, []byte("-----")) {
			continue
		}
		if *runs == nil {
			*runs = make(map[string]struct{}, len(text)-minQuotedLine+1)
			for i := 0; i+minQuotedLine <= len(text); i++ {
				(*runs)[text[i:i+minQuotedLine]] = struct{}{}
			}
		}
		for i := 0; i+minQuotedLine <= len(line); i++ {
			if _, ok := (*runs)[string(line[i:i+minQuotedLine])]; ok {
				return true
			}
		}
	}
	return false
}
