// Package stage is the daemon's output stage: it takes module views after a
// stabilization and brings the fill socket, needs, items and reports in line
// with them, remembering what it last filled and said of each module.
package stage
