// Package lab runs the whole example mesh on one machine in one process:
// an embedded nats-server configured with examples/nats/server.conf, the
// provisioner server, the dev vault, a fill server and a client per example
// node, all loaded from examples/. cmd/mesh-lab is its thin main.
package lab
