package fill

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestAFailureOfMeshFillIsLoggedAsAnErrorAndARefusalAsAWarning: a request
// refused (4xx: here a relative path) is a warning, "fill refused"; one
// mesh-fill failed to carry out (5xx: here its root gone) is an error,
// "fill failed", so an operator alerting on errors hears of a node-engine
// that cannot write. Before, both were the warning "fill refused", and a
// disk that failed every write was never an error of mesh-fill's log.
func TestAFailureOfMeshFillIsLoggedAsAnErrorAndARefusalAsAWarning(t *testing.T) {
	var log lockedLog
	root := t.TempDir()
	c := serveOn(t, &Server{Root: root, Log: zerolog.New(&log)})
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "etc/x.conf", Form: FormOwned}}})
	wantStatus(t, err, http.StatusBadRequest, "relative")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	_, err = c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/etc/x.conf", Form: FormOwned}}})
	wantStatus(t, err, http.StatusInternalServerError, "no longer the directory")

	got := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var ev struct {
			Level, Message string
			Status         int
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev.Status != 0 {
			got[ev.Status] = ev.Level + " " + ev.Message
		}
	}
	if got[400] != "warn fill refused" || got[500] != "error fill failed" {
		t.Errorf("logged %v; want the 400 as \"warn fill refused\", the 500 as \"error fill failed\"", got)
	}
}
