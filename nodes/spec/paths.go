package spec

import "strings"

// HasDotDot says whether the '/'-separated path p has a ".." element: a
// file path or archive member name that does, may climb out of its place.
func HasDotDot(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return true
		}
	}
	return false
}
