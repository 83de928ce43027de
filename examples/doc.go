// Package examples holds the example mesh (assignments, templates, config
// values, bindings and dev secrets) that the lab loads and the end-to-end
// tests use, the nats-server configuration with per-node permissions and
// the systemd units. Its tests prove the examples parse and that the
// configuration grants each user exactly the rights of SPEC §2.2 and §2.3.
package examples
