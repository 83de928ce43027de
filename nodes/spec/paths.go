package spec

import (
	"fmt"
	"strings"
)

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

// Linux's PATH_MAX less its NUL, and NAME_MAX: the longest path a file can
// be written at by name, and the longest name one element of it may be.
// mesh-fill refuses a longer one (outputs/fill/paths.go), as any
// node-engine must; the client refuses a plan naming one.
const (
	MaxPathBytes    = 4095
	MaxElementBytes = 255
)

// CheckPathLen says what is wrong with absolute path p's length ("" when
// nothing): over MaxPathBytes, or an element over MaxElementBytes.
func CheckPathLen(p string) string {
	if len(p) > MaxPathBytes {
		return fmt.Sprintf("%.64q… is %d bytes long; a path is at most %d", p, len(p), MaxPathBytes)
	}
	for _, el := range strings.Split(p, "/") {
		if len(el) > MaxElementBytes {
			return fmt.Sprintf("%.64q… has an element of %d bytes; a file's name is at most %d", p, len(el), MaxElementBytes)
		}
	}
	return ""
}
