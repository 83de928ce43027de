// Package examples holds the example mesh (assignments, templates, config
// values, bindings and dev secrets) that the lab loads and the end-to-end
// tests use, the nats-server configuration with per-node permissions
// (generated from nodes/spec RightsOf) and the systemd units. Its tests
// prove the examples parse and that those rights, as the configuration's
// password users and as JWT users of an operator, grant each user exactly
// what SPEC §2.2 and §2.3 give it.
package examples

//go:generate sh -c "cd .. && go run ./cmd/mesh-provisioner rights --format conf --all --node ace,g14 --provider gitea > examples/nats/server.conf"
