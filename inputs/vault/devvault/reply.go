package devvault

import (
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// clientInboxes is the prefix every node's client's inbox stands under
// (spec.ClientInbox: _INBOX.provisioner.<node>).
const clientInboxes = "_INBOX.provisioner."

// foreignReply says why the vault does not answer an ask on subject
// (mesh-vault.get.provisioner.<node>) whose reply subject is reply ("":
// it answers): only on an inbox, and among the clients' inboxes only on
// the asking node's. The vault's right to publish on every client's inbox
// (the rights cannot tie a reply to the request's node) let a node have it
// publish its answers on mesh-vault.secret-changed, to every client of the
// mesh at once, or into another node's inbox (an outside audit); a real
// vault must hold the same rule.
func foreignReply(subject, reply string) string {
	if reply == "" {
		return "" // nothing to answer on: served and recorded, not answered
	}
	if !strings.HasPrefix(reply, "_INBOX.") {
		return "its reply subject is no inbox"
	}
	if !strings.HasPrefix(reply, clientInboxes) {
		return "" // a connection with another inbox prefix (a test's, the lab's own)
	}
	node, err := spec.DecodeToken(subject[strings.LastIndexByte(subject, '.')+1:])
	if err != nil {
		return "its subject names no node"
	}
	if own := spec.ClientInbox(node) + "."; !strings.HasPrefix(reply, own) {
		return "its reply subject is another node's inbox, not " + own + "…"
	}
	return ""
}
