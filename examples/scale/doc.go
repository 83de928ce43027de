// Package scale generates synthetic meshes for the benchmarks: N nodes × M
// modules × F files with P placeholders per file in a fixed mix of kinds,
// collections with C contributors and providers with K consumers, as
// assignments, templates archives, config values, bindings and dev secrets,
// plus the full re-render of a node (the consul-template way) to compare with.
package scale
