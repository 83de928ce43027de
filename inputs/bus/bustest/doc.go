// Package bustest is what the project's tests share to run against a real
// bus: an embedded nats-server with JetStream (never a fake), a connection
// to it, a wait-until helper and a log sink safe for concurrent writers.
// It imports nothing of the project, so any package's tests may use it.
package bustest
