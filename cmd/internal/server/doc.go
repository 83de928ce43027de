// Package server is the provisioner server (SPEC §6): it creates the
// provisioner's four buckets, publishes the registry compiled in its code
// and answers the read-only verb mesh-provisioner.provisioning.
package server
