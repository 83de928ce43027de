package vault

import "strings"

// OwnName is the vault name of a module's own secret: own/<module>/<name>.
func OwnName(module, name string) string {
	return "own/" + module + "/" + name
}

// ProvisionName is the vault name of the credential a provisions entry
// receives: provision/<provider>/<provision>/<node>/<module>.
func ProvisionName(provider, provision, node, module string) string {
	return strings.Join([]string{"provision", provider, provision, node, module}, "/")
}

// PairName is the vault name of a consumer's credential as its provider
// asks for it: pair/<provider>/<provision>/<node>/<module>[/<local>].
func PairName(provider, provision, node, module, local string) string {
	n := strings.Join([]string{"pair", provider, provision, node, module}, "/")
	if local != "" {
		n += "/" + local
	}
	return n
}
