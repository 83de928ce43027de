// Package rights writes the bus rights of nodes/spec (RightsOf, Fleet) in
// the forms a deployment takes: a nats-server configuration, nsc commands,
// JSON, and an operator, account and user JWTs with their .creds files.
package rights
