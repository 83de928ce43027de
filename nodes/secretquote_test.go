package nodes

import (
	"strings"
	"testing"
	"time"
)

// What a program printed is looked at for every secret the client holds,
// whole or by its long lines (a PEM key's body line), not by short ones.
func TestQuotesSecretFindsAHeldValueOrALongLineOfIt(t *testing.T) {
	m := keysRig(t, "k=${secret:k}\nb=${secret:blank}\n")
	body := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 2) // 64 bytes
	m.SetSecret("own/k/k", []byte("-----BEGIN PRIVATE KEY-----\n"+body+"\n-----END PRIVATE KEY-----\n"), time.Time{})
	for _, c := range []struct {
		text string
		want bool
	}{
		{"app: bad key " + body[:40], false},                   // a part of a line: not looked for
		{"app: line 2 of the key: " + body + " refused", true}, // a whole line of 16 bytes or more
		{"app: -----END PRIVATE KEY-----", false},              // every PEM key has it
		{"app: exit status 1", false},
		{"app: value '  ' blank", false},                          // the blank secret's value is spaces: too short to look for
		{"the key is -----BEGIN PRIVATE KEY-----\n" + body, true}, // its body line after the armour
	} {
		if got := m.QuotesSecret(c.text); got != c.want {
			t.Errorf("QuotesSecret(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	m.SetSecret("own/k/blank", []byte("s3cr3t-tok"), time.Time{})
	if !m.QuotesSecret("token s3cr3t-tok refused") {
		t.Error("a held value, whole, not found")
	}
	m.SecretWaiting("own/k/blank", "vault away", time.Time{})
	if m.QuotesSecret("token s3cr3t-tok refused") {
		t.Error("a value no longer held still looked for")
	}
}
