package auth

import (
	"fmt"
	"io"
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// NSC writes the nsc commands that create r's user in account with exactly
// r's rights and write its .creds file (nsc add user, nsc generate creds);
// for a user that exists already, the same flags go to nsc edit user.
func NSC(w io.Writer, account string, r spec.Rights) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s\n", r.User, r.Comment)
	fmt.Fprintf(&b, "# a user that exists already: the same flags with `nsc edit user` (after --rm of what it held)\n")
	fmt.Fprintf(&b, "nsc add user --account %s --name %s", account, r.User)
	for _, s := range r.PublishAllow() {
		fmt.Fprintf(&b, " \\\n  --allow-pub %s", shellQuote(s))
	}
	for _, s := range r.SubscribeAllow() {
		fmt.Fprintf(&b, " \\\n  --allow-sub %s", shellQuote(s))
	}
	if r.AllowResponses {
		b.WriteString(" \\\n  --allow-pub-response")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "nsc generate creds --account %s --name %s > %s.creds\n", account, r.User, r.User)
	_, err := io.WriteString(w, b.String())
	return err
}

// shellQuote single-quotes s for a POSIX shell ('$' stays literal).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
