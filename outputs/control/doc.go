// Package control is the daemon's control socket (SPEC §5.5) but for its
// listener: the wire types, the answers built from the graph, the Client
// the operator's commands and the lab ask with, and the text for people.
package control
