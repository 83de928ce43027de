// Package devvault is the dev vault for the lab and tests: it keeps secrets
// in memory and answers the vault protocol (SPEC §4.2) over real NATS,
// checking the asking node's rights against mesh-controller_assignments and
// sealing every value to the asker's public key.
package devvault
