// Package fill is the fill socket of SPEC §4.3, both sides: the Client the
// daemon uses to send a module's files to the node-engine, and the Server
// behind `mesh-fill`, which writes them atomically, removes what a module
// no longer declares, and restarts or reloads the programs whose files changed.
//
// The root (--root, "/" without it) is the directory its path named when
// Serve started: Serve opens it then and holds it open, and every request
// opens its paths one element at a time below that handle, never below
// the root's path looked up again (dirs.go holdRoot). A request while the
// path no longer names that directory (removed, moved, or replaced by a
// symlink by one who may write its parent) is refused, 500 naming the
// root, and nothing of it is written anywhere: an operator's --root
// confines writes to the directory named at start, and a root gone is
// said, not followed. Put back, it is served again; a new root at the
// path is taken by restarting mesh-fill.
package fill
