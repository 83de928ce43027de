package spec

import (
	"fmt"
	"strings"
)

// Vault names (SPEC §4.2): own/<module>/<name>,
// provision/<provider>/<provision>/<node>/<module>[/<local>] and
// pair/<provider>/<provision>/<node>/<module>[/<local>]. No part holds '/'
// nor is "." or ".." (CheckVaultPart; the plan is refused otherwise), so a
// name splits on '/' one way only. The classes, as VaultName.Class holds
// them:
const (
	VaultOwn       = "own"
	VaultProvision = "provision"
	VaultPair      = "pair"
)

// OwnSecretName is the vault name of a module's own secret.
func OwnSecretName(module, name string) string { return VaultOwn + "/" + module + "/" + name }

// ProvisionSecretName is the vault name of the credential a provider issued
// for a provisions entry of module on node; the local is appended when not
// empty, so two holders of one provision never share one.
func ProvisionSecretName(provider, provision, node, module, local string) string {
	return withLocal(VaultProvision+"/"+provider+"/"+provision+"/"+node+"/"+module, local)
}

// PairSecretName is the vault name of a consumer's credential, asked by the
// provider's client.
func PairSecretName(provider, provision, node, module, local string) string {
	return withLocal(VaultPair+"/"+provider+"/"+provision+"/"+node+"/"+module, local)
}

func withLocal(s, local string) string {
	if local != "" {
		s += "/" + local
	}
	return s
}

// IsPairName says whether name is a consumer's credential (pair/…).
func IsPairName(name string) bool { return strings.HasPrefix(name, VaultPair+"/") }

// IsProvisionName says whether name is a provisions entry's credential
// (provision/…), the one request that carries a credential form.
func IsProvisionName(name string) bool { return strings.HasPrefix(name, VaultProvision+"/") }

// CheckVaultPart says why s may not stand as one part of a vault name (""
// when it may): it holds '/', or is "." or "..", either of which would
// make the name read another way (own/a/b/k: module a's b/k, or a/b's k?).
func CheckVaultPart(s string) string {
	switch {
	case strings.Contains(s, "/"):
		return `holds "/", which splits a vault name (SPEC §4.2)`
	case s == "." || s == "..":
		return fmt.Sprintf("is %q, which a vault name may not hold as a part (SPEC §4.2)", s)
	}
	return ""
}

// VaultName is a vault name split into its parts. Own names set Module and
// Name; provision and pair names Provider, Provision, Node, Module and
// Local ("" when absent), a pair's Node and Module being the consumer's.
type VaultName struct {
	Class                             string // "own", "provision" or "pair"
	Provider, Provision, Node, Module string
	Name, Local                       string
}

// ParseVaultName is the inverse of the three names above. It splits name
// on '/': a name with too many or too few parts is refused. Empty parts
// are not judged here.
func ParseVaultName(name string) (VaultName, error) {
	parts := strings.Split(name, "/")
	switch parts[0] {
	case VaultOwn:
		if len(parts) != 3 {
			return VaultName{}, fmt.Errorf("vault name %q is not own/<module>/<name>", name)
		}
		return VaultName{Class: VaultOwn, Module: parts[1], Name: parts[2]}, nil
	case VaultProvision, VaultPair:
		if len(parts) != 5 && len(parts) != 6 {
			return VaultName{}, fmt.Errorf("vault name %q is not %s/<provider>/<provision>/<node>/<module>[/<local>]", name, parts[0])
		}
		v := VaultName{Class: parts[0], Provider: parts[1], Provision: parts[2], Node: parts[3], Module: parts[4]}
		if len(parts) == 6 {
			v.Local = parts[5]
		}
		return v, nil
	}
	return VaultName{}, fmt.Errorf("vault name %q is not own/, provision/ or pair/", name)
}
