package vault

import (
	"strings"
	"testing"
)

// A reply that parses but names no status ({}, null, a box alone) says
// so, not "a status (0 bytes) that is not sealed, absent or refused": the
// operator reading the need's why is told what the vault left out.
func TestAVaultReplyWithoutAStatusSaysItHasNone(t *testing.T) {
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, reply := range []string{`{}`, `null`, `{"box":"AAAA"}`, `{"status":""}`} {
		r := readReply(keys, "own/app/k", []byte(reply))
		if r.Outcome != Error || !strings.Contains(r.Reason, "own/app/k has no status") {
			t.Errorf("reply %s: %s; want an error saying it has no status", reply, r)
		}
	}
	r := readReply(keys, "own/app/k", []byte(`{"status":"later"}`))
	if r.Outcome != Error || !strings.Contains(r.Reason, "has a status (5 bytes) that is not sealed, absent or refused") {
		t.Errorf("unknown status: %s", r)
	}
}
