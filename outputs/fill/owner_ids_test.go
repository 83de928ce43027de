package fill

import (
	"net/http"
	"testing"
)

// TestAnOwnerOrGroupNoIdHoldsIsRefused: a numeric owner or group a
// uid_t does not hold, or (uid_t)-1, is refused (400). Before,
// "4294967296" was taken and chown truncated it to 0, so the file was
// root's, and, never matching the file's owner, was written (and its
// program restarted) at every request.
func TestAnOwnerOrGroupNoIdHoldsIsRefused(t *testing.T) {
	defer func(old func() bool) { canChown = old }(canChown)
	canChown = func() bool { return true }
	c := startServer(t, &Server{Root: t.TempDir()})
	for _, id := range []string{"4294967296", "4294967295", "18446744073709551616", "+5", "-1"} {
		for _, group := range []bool{false, true} {
			f := File{Path: "/f", Form: FormOwned, Content: []byte("x\n")}
			if group {
				f.Group = id
			} else {
				f.Owner = id
			}
			_, err := c.Fill(t.Context(), Request{Module: "a", Files: []File{f}})
			wantStatus(t, err, http.StatusBadRequest, "is not a")
		}
	}
}
