// Package archive is the templates archive store (SPEC §3 templates): it
// fetches a plan's archive from a JetStream object store (obj://) or a file
// (file://), checks its SHA-256 against the plan's digest, keeps it under the
// state directory by digest (a cache: one it cannot keep there is used from
// memory, and Store.CacheFailed told why), and reads its tar safely within
// the §4.1 limits; a Fetcher fetches in the background, each try within a
// timeout, again with backoff while not there. An archive is kept, in
// memory and in the cache, while a current plan names it: Fetcher.Retain
// drops the others (and, the first time, what an earlier run cached that
// no plan names).
package archive
