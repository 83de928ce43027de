// Package chaos is the chaos run of issue 23: a seeded schedule of value
// churn and faults (a cluster member killed, the whole bus restarted, a
// client's connection cut, the vault silent or refusing, mesh-fill stopped,
// slow or restarted between a fill and a removal, a client SIGKILLed) run
// against a three-server JetStream cluster, the provisioner server, the dev
// vault, real client processes and their mesh-fill; then, with faults and
// churn stopped, a check that every node's files catch up with what a
// fresh client renders from the buckets as they are. See
// docs/RELIABILITY.md for what it checks and how to replay a seed.
//
// It holds tests only: `go test ./cmd/internal/chaos -run Chaos`, or
// `make chaos SEED=… MINUTES=…`. It runs the client as its own binary
// (cmd/internal/proctest builds it), so it never imports the daemon.
package chaos
