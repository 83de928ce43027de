package bus

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
)

// checkInbox says whether the user of claims (from the creds file at
// path) may hear replies on inbox (a prefix, InboxPrefix's; "" checks
// nothing), when its JWT lists what it may subscribe to: a unit copied
// from another machine with that node's creds connects fine, and then
// every request it makes goes unanswered (its replies come on an inbox its
// user may not hear), so the client ran for ever saying "context deadline
// exceeded" with one permissions line as the only hint. A JWT with no
// subscribe list (its account's defaults, or no limit) passes.
func checkInbox(path string, claims *jwt.UserClaims, inbox string) error {
	allow := claims.Permissions.Sub.Allow
	if inbox == "" || len(allow) == 0 {
		return nil
	}
	reply := inbox + ".x"
	for _, p := range allow {
		if subjectMatches(p, reply) {
			return nil
		}
	}
	return fmt.Errorf("creds file %s is for user %s, who may not hear replies on %s.> (the creds of another node or role?)",
		path, claims.Name, inbox)
}

// subjectMatches says whether subject (no wildcards) is matched by
// pattern, whose tokens may be * (one token) and a last > (one or more).
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, t := range p {
		if t == ">" {
			return i == len(p)-1 && len(s) > i
		}
		if i >= len(s) || (t != "*" && t != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

// InboxOfCreds is the reply prefix the user of the creds file at path
// hears replies on: the first `_INBOX.<x>.>` its JWT may subscribe to, as
// `_INBOX.<x>`; "" when its JWT lists none (a user without limits) or the
// file cannot be read as creds (CheckCreds says why).
func InboxOfCreds(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return ""
	}
	claims, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return ""
	}
	for _, p := range claims.Permissions.Sub.Allow {
		if prefix, ok := strings.CutSuffix(p, ".>"); ok && strings.HasPrefix(prefix, "_INBOX.") &&
			!strings.ContainsAny(prefix, "*>") {
			return prefix
		}
	}
	return ""
}
