package spec

import (
	"fmt"
	"strings"
)

// Vault names (SPEC §4.2): own/<module>/<name>,
// provision/<provider>/<provision>/<node>/<module> and
// pair/<provider>/<provision>/<node>/<module>[/<local>]. The classes,
// as VaultName.Class holds them:
const (
	VaultOwn       = "own"
	VaultProvision = "provision"
	VaultPair      = "pair"
)

// OwnSecretName is the vault name of a module's own secret.
func OwnSecretName(module, name string) string { return VaultOwn + "/" + module + "/" + name }

// ProvisionSecretName is the vault name of the credential a provider issued
// for a provisions entry of module on node.
func ProvisionSecretName(provider, provision, node, module string) string {
	return VaultProvision + "/" + provider + "/" + provision + "/" + node + "/" + module
}

// PairSecretName is the vault name of a consumer's credential, asked by the
// provider's client.
func PairSecretName(provider, provision, node, module, local string) string {
	s := VaultPair + "/" + provider + "/" + provision + "/" + node + "/" + module
	if local != "" {
		s += "/" + local
	}
	return s
}

// IsPairName says whether name is a consumer's credential (pair/…).
func IsPairName(name string) bool { return strings.HasPrefix(name, VaultPair+"/") }

// VaultName is a vault name split into its parts. Own names set Module and
// Name; provision names Provider, Provision, Node and Module; pair names
// those and Local ("" when absent), Node and Module being the consumer's.
type VaultName struct {
	Class                             string // "own", "provision" or "pair"
	Provider, Provision, Node, Module string
	Name, Local                       string
}

// ParseVaultName is the inverse of the three names above. It splits name
// on '/': the name of an own secret may hold '/', every other part may
// not, so a name with too many or too few parts is refused. Empty parts
// are not judged here.
func ParseVaultName(name string) (VaultName, error) {
	parts := strings.Split(name, "/")
	switch parts[0] {
	case VaultOwn:
		if len(parts) < 3 {
			return VaultName{}, fmt.Errorf("vault name %q is not own/<module>/<name>", name)
		}
		return VaultName{Class: VaultOwn, Module: parts[1], Name: strings.Join(parts[2:], "/")}, nil
	case VaultProvision:
		if len(parts) != 5 {
			return VaultName{}, fmt.Errorf("vault name %q is not provision/<provider>/<provision>/<node>/<module>", name)
		}
		return VaultName{Class: VaultProvision, Provider: parts[1], Provision: parts[2], Node: parts[3], Module: parts[4]}, nil
	case VaultPair:
		if len(parts) != 5 && len(parts) != 6 {
			return VaultName{}, fmt.Errorf("vault name %q is not pair/<provider>/<provision>/<node>/<module>[/<local>]", name)
		}
		v := VaultName{Class: VaultPair, Provider: parts[1], Provision: parts[2], Node: parts[3], Module: parts[4]}
		if len(parts) == 6 {
			v.Local = parts[5]
		}
		return v, nil
	}
	return VaultName{}, fmt.Errorf("vault name %q is not own/, provision/ or pair/", name)
}
