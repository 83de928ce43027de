package nodes

import (
	"bytes"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
)

// minQuotedRun is the fewest bytes of a line of a secret's value that
// QuotesSecret looks for as a part of it: any run of that many bytes of
// a line (a program that rejects a token may print its first 40 bytes; a
// PEM key's body lines are 64 bytes, and a program that reads the key may
// print one or a part of one). Fewer stand in ordinary errors: at 16, a
// secret DSN's "db.mesh.internal:5432" (21 bytes) withheld every
// "could not connect to db.mesh.internal:5432" of any module (an outside
// audit). A PEM armour line ("-----BEGIN …", "-----END …") is every key's
// and is not looked for.
const minQuotedRun = 24

// minQuotedLine is the shortest line of a secret's value looked for
// whole: a 14-byte password on a line of its own, printed alone, was said
// (an outside audit); a shorter line stands in much text.
const minQuotedLine = 12

// minQuotedValue is the shortest value (spaces around it aside) looked for
// whole: a value of fewer bytes stands in almost any text, and is no
// secret.
const minQuotedValue = 4

// QuotesSecret says whether text holds the value of a secret this client
// holds (a vault name's value, a consumers list's credentials), or held
// last before that (files on disk may still hold it: the vault refused
// it since, or a rotation is not filled yet), or held first in this run
// (a seed file keeps it): whole (minQuotedValue bytes or more), a line of
// it whole (minQuotedLine), or any minQuotedRun bytes of a line. Text from
// outside the client (the node-engine's error, which may carry a
// program's last words; the vault's reason for a refusal) is not said
// when it does (outputs/stage failure.go, the daemon's vault.go): a
// program may print what it read, from any file of the node. Only exact
// bytes are looked for, not encodings of them.
//
// What it said of a text is kept until a secret changes (at most
// quotedKept texts): a vault refusing two hundred names with one reason
// had each looked at in every secret held, 2 MiB of them, and the loop
// held 4.4 s (an outside audit).
func (m *NodeGraph) QuotesSecret(text string) bool {
	if said, ok := m.quoted[text]; ok {
		return said
	}
	said := m.quotesSecret(text)
	if len(m.quoted) >= quotedKept {
		clear(m.quoted)
	}
	if m.quoted == nil {
		m.quoted = map[string]bool{}
	}
	m.quoted[text] = said
	return said
}

// quotedKept is how many texts QuotesSecret keeps what it said of.
const quotedKept = 64

func (m *NodeGraph) quotesSecret(text string) bool {
	var runs map[string]struct{} // text's runs of minQuotedRun bytes, made when first needed
	for _, s := range m.secrets {
		if s.state == graph.Ready && quotes(text, s.value, &runs) || quotes(text, s.before, &runs) || quotes(text, s.first, &runs) {
			return true
		}
	}
	return false
}

// quotes says whether text holds value whole, a line of it of
// minQuotedLine bytes or more whole, or a run of minQuotedRun bytes of one; runs holds text's runs, made at the first
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
		if len(line) < minQuotedRun {
			if strings.Contains(text, string(line)) {
				return true
			}
			continue
		}
		if len(text) < minQuotedRun {
			continue
		}
		if *runs == nil {
			*runs = make(map[string]struct{}, len(text)-minQuotedRun+1)
			for i := 0; i+minQuotedRun <= len(text); i++ {
				(*runs)[text[i:i+minQuotedRun]] = struct{}{}
			}
		}
		for i := 0; i+minQuotedRun <= len(line); i++ {
			if _, ok := (*runs)[string(line[i:i+minQuotedRun])]; ok {
				return true
			}
		}
	}
	return false
}
