// Package fill is the fill socket of SPEC §4.3, both sides: the Client the
// daemon uses to send a module's files to the node-engine, and the Server
// behind `mesh-fill`, which writes them atomically, removes what a module
// no longer declares, and restarts or reloads the programs whose files changed.
package fill
