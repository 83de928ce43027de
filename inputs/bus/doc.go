// Package bus connects the provisioner to NATS and keeps JetStream KV
// buckets in sync as state (SPEC §2, §4.7): Connect reconnects forever with
// backoff, and a Watch waits for its bucket, then delivers one Snapshot of the
// keys under its filter followed by live changes, with Resync for when the bus
// comes back.
package bus
