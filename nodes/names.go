package nodes

// Vault names (SPEC §4.2).

// OwnSecretName is the vault name of a module's own secret.
func OwnSecretName(module, name string) string { return "own/" + module + "/" + name }

// ProvisionSecretName is the vault name of the credential a provider issued
// for a provisions entry of module on node.
func ProvisionSecretName(provider, provision, node, module string) string {
	return "provision/" + provider + "/" + provision + "/" + node + "/" + module
}

// PairSecretName is the vault name of a consumer's credential, asked by the
// provider's client.
func PairSecretName(provider, provision, node, module, local string) string {
	s := "pair/" + provider + "/" + provision + "/" + node + "/" + module
	if local != "" {
		s += "/" + local
	}
	return s
}

// Bucket names (SPEC §2.2).
const (
	AssignmentsBucket = "mesh-controller_assignments"
	RegistryBucket    = "mesh-provisioner_registry"
	ConfigBucket      = "mesh-config_resolved"
	NeedsBucket       = "mesh-provisioner_needs"
	AppliedBucket     = "mesh-provisioner_applied"
	CollectBucket     = "mesh-provisioner_collect"
)

// BoundBucket is the bucket a provider writes its bindings to.
func BoundBucket(provider string) string { return provider + "_bound" }

// BoundKey is the key of a binding in its provider's bucket.
func BoundKey(node, module, provision, local string) string {
	if local == "" {
		return EncodeKey(node, module, provision)
	}
	return EncodeKey(node, module, provision, local)
}
