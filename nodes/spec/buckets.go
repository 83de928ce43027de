package spec

import "strings"

// Bucket names (SPEC §2.2).
const (
	AssignmentsBucket = "mesh-controller_assignments"
	RegistryBucket    = "mesh-provisioner_registry"
	ConfigBucket      = "mesh-config_resolved"
	NeedsBucket       = "mesh-provisioner_needs"
	AppliedBucket     = "mesh-provisioner_applied"
	CollectBucket     = "mesh-provisioner_collect"
)

// boundSuffix ends the name of a provider's bucket of bindings.
const boundSuffix = "_bound"

// BoundBucket is the bucket a provider writes its bindings to.
func BoundBucket(provider string) string { return provider + boundSuffix }

// BoundProvider is the inverse of BoundBucket: the provider whose bucket
// bucket is, and false when bucket is not a provider's bucket.
func BoundProvider(bucket string) (string, bool) {
	return strings.CutSuffix(bucket, boundSuffix)
}

// BoundKey is the key of a binding in its provider's bucket.
func BoundKey(node, module, provision, local string) string {
	if local == "" {
		return EncodeKey(node, module, provision)
	}
	return EncodeKey(node, module, provision, local)
}
