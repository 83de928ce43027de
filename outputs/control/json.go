package control

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// WriteJSON answers v as indented JSON with status code. Every control
// byte of a string is a JSON escape, never raw (see jsonSafe).
func WriteJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(jsonSafe(b.Bytes()))
}
