package fill

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestAFailedProgramOfAUnitNoLongerNamedDoesNotFailTheModuleForEver:
// a restart that failed (a unit that does not exist) stays pending; once
// the module's whole request names another unit, or the module is
// deleted, it is no longer owed. Before, every later request of the
// module, even after a DELETE, answered 500 for the old unit.
func TestAFailedProgramOfAUnitNoLongerNamedDoesNotFailTheModuleForEver(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	cmd := []string{"sh", "-c", fmt.Sprintf(`case "$1" in bad*) echo "no unit $1" >&2; exit 5;; esac; echo "$0 $1" >> %s`, runs)}
	c := startServer(t, &Server{Root: root, StateDir: state, Command: cmd})
	req := func(content, unit string) Request {
		return Request{Module: "a", Whole: true, Files: []File{{Path: "/app.conf", Form: FormOwned, Content: []byte(content),
			OnChange: OnChange{Action: OnChangeRestart, Unit: unit}}}}
	}
	_, err := c.Fill(t.Context(), req("v1\n", "bad.service"))
	wantStatus(t, err, http.StatusInternalServerError, "no unit bad.service")

	// the plan fixed: another unit
	resp := fillOK(t, c, req("v2\n", "good.service"))
	if resp.Program == nil || resp.Program.Action != ProgramRestarted {
		t.Errorf("program: %+v", resp.Program)
	}
	mustRead(t, runs, "restart good.service\n")

	// failed again, then the module deleted and back
	_, err = c.Fill(t.Context(), req("v3\n", "bad.service"))
	wantStatus(t, err, http.StatusInternalServerError, "no unit bad.service")
	if _, err := c.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, req("v4\n", "good.service"))
	if files, _ := filepath.Glob(filepath.Join(state, "pending-*")); len(files) != 0 {
		t.Errorf("pending files left: %v", files)
	}
	if _, err := os.Stat(filepath.Join(root, "app.conf")); err != nil {
		t.Error(err)
	}
}
