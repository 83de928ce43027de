package spec

import (
	"fmt"
	"strings"
)

// Subjects (SPEC §2.3). A node or module in a subject is one key token.
const (
	// VaultGetPrefix is followed by the asking node's token.
	VaultGetPrefix = "mesh-vault.get.provisioner."
	// VaultVerb is the verb the registry names for kinds the vault answers.
	VaultVerb = "mesh-vault.get"
	// VaultChangedSubject carries {"secret": "<vault name>"}, never a value.
	VaultChangedSubject = "mesh-vault.secret-changed"
	// QuerySubject is the provisioner server's read-only verb (SPEC §6.2).
	QuerySubject = "mesh-provisioner.provisioning"

	appliedPrefix = "prov.applied."
	changedPrefix = "prov.changed."
	askPrefix     = "prov.ask."
)

// VaultGetSubject is the vault request subject of node:
// mesh-vault.get.provisioner.<node>.
func VaultGetSubject(node string) string { return VaultGetPrefix + EncodeToken(node) }

// VaultGetNode is the inverse of VaultGetSubject: the asking node.
func VaultGetNode(subject string) (string, error) {
	tok, ok := strings.CutPrefix(subject, VaultGetPrefix)
	if !ok || tok == "" || strings.Contains(tok, ".") {
		return "", fmt.Errorf("subject %s is not %s<node>", subject, VaultGetPrefix)
	}
	node, err := DecodeToken(tok)
	if err != nil {
		return "", fmt.Errorf("subject %s: node token out of shape: %w", subject, err)
	}
	return node, nil
}

// ClientBusName is the bus connection name of node's client,
// provisioner.<node>, the node one key token (§2.1) as in every subject:
// its inbox (ClientInbox) is then one token whatever the name holds (a
// node "n.1" had its replies under node n's inbox, _INBOX.provisioner.n.>,
// where n's vault answers could be sent to it).
func ClientBusName(node string) string { return "provisioner." + EncodeToken(node) }

// ClientInbox is the prefix of node's client's reply subjects,
// _INBOX.provisioner.<node>: the only inbox its rights let it hear.
func ClientInbox(node string) string { return "_INBOX." + ClientBusName(node) }

// AppliedSubject is prov.applied.<node>.<module>, a module's report.
func AppliedSubject(node, module string) string { return appliedPrefix + EncodeKey(node, module) }

// ChangedSubject is prov.changed.<node>.<module>.
func ChangedSubject(node, module string) string { return changedPrefix + EncodeKey(node, module) }

// AskSubject is prov.ask.<node>, the verb a node's client answers.
func AskSubject(node string) string { return askPrefix + EncodeToken(node) }
