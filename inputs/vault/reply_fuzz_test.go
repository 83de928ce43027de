package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/box"
)

// The vault's reply (SPEC §4.2), whatever bytes it is: sealed, absent or
// refused as it says, or an Error naming the secret and saying how the
// reply is out of shape without quoting it; a value sealed to the
// client's key opens to the same bytes.
func FuzzReadReply(f *testing.F) {
	keys, err := NewKeys()
	if err != nil {
		f.Fatal(err)
	}
	seal := func(value []byte) string {
		sealed, err := box.SealAnonymous(nil, value, keys.public, rand.Reader)
		if err != nil {
			panic(err) // crypto/rand does not fail
		}
		return base64.StdEncoding.EncodeToString(sealed)
	}
	for _, s := range []string{
		`{"status": "sealed",  "box": "` + seal([]byte("s3cr3t")) + `"}`,
		`{"status": "absent"}`,
		`{"status": "refused", "reason": "module claude-code may not read own/x/y"}`,
		`{"status": "sealed", "box": "not base64!"}`,
		`{"status": "sealed", "box": "AAAA"}`,
		`{"status": "sealed"}`,
		`{"status": 7}`, `{"STATUS": "absent"}`, `null`, `[]`, `"sealed"`, ``, `{`,
	} {
		f.Add([]byte(s), []byte("s3cr3t"))
	}
	const secret = "own/claude-code/api-key"
	f.Fuzz(func(t *testing.T, data, value []byte) {
		r := readReply(keys, secret, data)
		switch r.Outcome {
		case Sealed:
			if r.Reason != "" {
				t.Fatalf("%q: sealed with a reason %q", data, r.Reason)
			}
		case Absent, Refused:
			if r.Reason == "" || len(r.Reason) > maxReason+64 || r.Value != nil {
				t.Fatalf("%q: %v with reason of %d bytes", data, r.Outcome, len(r.Reason))
			}
		case Error:
			if !strings.Contains(r.Reason, secret) || r.Value != nil {
				t.Fatalf("%q: error %q does not name the secret", data, r.Reason)
			}
			var rep Reply
			_ = json.Unmarshal(data, &rep)
			for _, b := range []string{rep.Box, rep.Status, string(data)} {
				if len(b) >= 16 && strings.Contains(r.Reason, b) {
					t.Fatalf("%q: error %q quotes the reply", data, r.Reason)
				}
			}
		default:
			t.Fatalf("%q: outcome %v", data, r.Outcome)
		}
		// A value sealed to this client's key opens to its bytes.
		reply, _ := json.Marshal(Reply{Status: StatusSealed, Box: seal(value)})
		if r := readReply(keys, secret, reply); r.Outcome != Sealed || !bytes.Equal(r.Value, value) {
			t.Fatalf("%d bytes sealed read back as %v", len(value), r)
		}
	})
}

// A secret-changed event (SPEC §2.3: {"secret": "<vault name>"}, never a
// value) names a vault name, or is said out of shape in words that quote
// none of its bytes; a name written as the vault writes it reads back.
func FuzzChangedName(f *testing.F) {
	for _, s := range []string{
		`{"secret": "own/claude-code/api-key"}`, `{"secret": ""}`, `{"secret": null}`, `{"secret": 7}`,
		`{"secret": {"a": 1}}`, `{"Secret": "own/a/b"}`, `{}`, `null`, `[]`, `"x"`, ``, `{"secret": "a", "secret": "b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, problem := changedName(data)
		if (name == "") == (problem == "") {
			t.Fatalf("%q: name %q, problem %q", data, name, problem)
		}
		if len(data) >= 8 && strings.Contains(problem, string(data)) {
			t.Fatalf("%q: problem %q quotes the payload", data, problem)
		}
		if name == "" {
			return
		}
		again, _ := json.Marshal(map[string]string{"secret": name})
		if n, p := changedName(again); n != name {
			t.Fatalf("%q names %q; written again %s names %q (%s)", data, name, again, n, p)
		}
	})
}
