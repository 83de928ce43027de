// Package vault is the provisioner client's side of the vault protocol
// (SPEC §4.2, §2.3): an in-memory X25519 key pair, the sealed-box
// request/reply on mesh-vault.get.provisioner.<node>, an Asker that asks
// again on its own (backoff, refused retry), vault names and the
// mesh-vault.secret-changed watch.
package vault
