// Package report writes what the client says about its modules (SPEC §5.2
// to §5.4): needs, reports (bucket and event), collection items and
// prov.changed events. Each key is written only when its bytes differ from
// what this process last wrote, and a write that fails is tried again at
// the next call. It never receives a secret's value.
package report
