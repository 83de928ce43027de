// Package spec is the SPEC's vocabulary: the key codec (§2.1), bucket,
// subject and vault names and their inverses, the limits of §4.1, path
// checks and the table of placeholder kinds. It imports nothing of the project.
package spec
