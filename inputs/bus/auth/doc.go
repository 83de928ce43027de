// Package auth is the bus's authorization in the forms a deployment takes,
// all made from nodes/spec RightsOf: a nats-server configuration, nsc
// commands, an operator whose JWT users carry the rights in .creds files,
// and the check of a .creds file before a connection uses it.
package auth
