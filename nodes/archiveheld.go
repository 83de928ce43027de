package nodes

import "time"

// A module already here whose plan moves to a templates archive not held
// yet waits for it to be fetched: its graph says "not fetched yet", and
// its report said waiting, then applied a moment later, its files as they
// were (an outside audit: two reports and events a module at each roll-out
// of an archive, and a transient waiting in the server's sweep). It is held
// instead, as a module reading a provider's bucket not read yet is
// (HoldUnread: no fill, no report, no need, so its last report stands)
// until its archive is here, fetched or failed, or ArchiveHold passed:
// then it says it waits, as before. A module new to the node is not held
// (a start's first fill waits for the archives in the cache already).

// ArchiveHold bounds how long a module whose plan moved to an archive not
// held yet is held for it (an archive is fetched in milliseconds from the
// cache or the object store; a slow one is said waiting after this).
const ArchiveHold = 5 * time.Second

// archiveMoved records that module's plan, already here, moved to an
// archive not held yet.
func (m *NodeGraph) archiveMoved(module string) {
	if m.archiveWanted == nil {
		m.archiveWanted = map[string]time.Time{}
	}
	m.archiveWanted[module] = time.Now()
}

// archivesAwaited are the modules archiveMoved named whose archive is not
// here yet, for less than ArchiveHold; the others are forgotten.
func (m *NodeGraph) archivesAwaited(now time.Time) map[string]bool {
	var out map[string]bool
	for name, since := range m.archiveWanted {
		mod := m.mods[name]
		a, held := m.archives[name]
		if mod == nil || mod.asg == nil || (held && a.digest == mod.asg.Provisioning.Templates.Digest) || now.Sub(since) >= ArchiveHold {
			delete(m.archiveWanted, name)
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[name] = true
	}
	return out
}
