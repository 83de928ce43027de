package spec

import (
	"fmt"
	"net/url"
	"strings"
)

// FileRefPath is the path a `file://` templates ref names (SPEC §3:
// `file:///abs/path`). The ref is a file URI (RFC 8089), so its path is
// percent-decoded: file:///srv/my%20templates.tar names
// "/srv/my templates.tar", as every tool writing a file URI means it. A
// byte written as itself (a space) stays itself; a '%' not followed by two
// hex digits is an error (a '%' in a file name is written %25). What the
// path may be (absolute, clean, no "..") is the caller's to check on the
// decoded path. ref must begin with "file://".
func FileRefPath(ref string) (string, error) {
	p, err := url.PathUnescape(strings.TrimPrefix(ref, "file://"))
	if err != nil {
		return "", fmt.Errorf("%v: a file:// ref is a file URI (RFC 8089), its path percent-encoded: a \"%%\" in a file name is written %%25", err)
	}
	return p, nil
}
