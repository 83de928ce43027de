// Package control is the daemon's control socket (SPEC §5.5) but for its
// HTTP handler: the listener, wire types, answers built from the graph, the
// Client the operator's commands and the lab use, and the text for people.
package control
