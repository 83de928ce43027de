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
//
// The authority (what stands between "file://" and the path's first '/')
// is empty or "localhost" (any case, percent-decoded): RFC 8089 makes
// file://localhost/p the same file as file:///p. Any other host is
// refused (this client reads no other machine's files), and so is the
// form file://etc/x, which names host "etc" and no path.
func FileRefPath(ref string) (string, error) {
	rest := strings.TrimPrefix(ref, "file://")
	host, p := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, p = rest[:i], rest[i:]
	}
	if host != "" {
		h, err := url.PathUnescape(host)
		if err != nil || !strings.EqualFold(h, "localhost") {
			return "", fmt.Errorf("it names host %q: only a file of this machine is read, file:///<absolute path> (or file://localhost/<absolute path>)", host)
		}
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("%v: a file:// ref is a file URI (RFC 8089), its path percent-encoded: a \"%%\" in a file name is written %%25", err)
	}
	return p, nil
}
