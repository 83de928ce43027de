// Package daemon is the node daemon (mesh-provisioner-client run): one
// struct wiring the inputs (bus watchers, the vault, the templates store)
// to the graph (nodes.NodeGraph) and the graph to the outputs (the fill socket,
// needs, reports, items, events). One goroutine owns the graph; everything
// else sends it events, and a batch of events is one stabilization.
package daemon
