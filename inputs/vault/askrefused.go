package vault

import "time"

// AskRefused asks again each of names the vault refused, at once or
// within spread (AskRefusedOf), and says how many: an assignment the vault judges them by was written (again) —
// a consumer's, for the credentials (pair/…) it binds, which are asked in
// the provider's name and so are not AskRefusedOf the consumer's module.
// A name under way is marked so that a refusal of it, made before this
// call, is not taken but asked again (run); a name not asked, or not
// refused, is left as it is. Each name is one map look-up: a client reads
// every assignment of the mesh, and this runs at each.
func (a *Asker) AskRefused(names []string, spread time.Duration) int {
	if len(names) == 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now, n := time.Now(), 0
	for _, name := range names {
		if st := a.asks[name]; st != nil && a.refusedAgain(name, st, now, spread) {
			n++
		}
	}
	return n
}

// AssignmentWritten asks again at once what the vault refused that an
// assignment just written may change its word on: the names asked in
// module's name ("" for none: another node's assignment; AskRefusedOf),
// and pairs, the consumers' credentials it binds (AskRefused). It says
// how many of each; spread as theirs.
func (a *Asker) AssignmentWritten(module string, pairs []string, spread time.Duration) (own, paired int) {
	if module != "" {
		own = a.AskRefusedOf(module, spread)
	}
	return own, a.AskRefused(pairs, spread)
}
