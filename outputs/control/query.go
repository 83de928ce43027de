package control

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// moduleParam is the module a request's query names ("" for none), or
// the 400 answer saying why the query names none it can take: a query
// that does not parse (url.Query drops such a pair, so "module=%ZZ" read
// as no module: explain said "name a module", graph.dot drew the whole
// graph), or one naming more than one module (the first was taken, the
// others left without a word). Other parameters are ignored.
func moduleParam(r *http.Request) (string, *ErrorBody) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", &ErrorBody{Error: fmt.Sprintf("the query %q does not parse: %v", r.URL.RawQuery, err)}
	}
	switch ms := q["module"]; len(ms) {
	case 0:
		return "", nil
	case 1:
		return ms[0], nil
	default:
		return "", &ErrorBody{Error: fmt.Sprintf("name one module at a time: the query names %d (%s)", len(ms), strings.Join(ms, ", "))}
	}
}
