// Package layout holds no code: its test pins the project's import rules
// (DEVELOPERS.md, docs/DESIGN.md), as go/build's deps_test.go does for the
// standard library.
package layout
