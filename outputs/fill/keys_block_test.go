package fill

import (
	"path/filepath"
	"testing"
)

// TestManagedKeysLeaveAnotherModulesBlockAlone: module a manages a
// block in a file where module b manages keys (SPEC §4.3 r2 lets them
// share it); b's key set inside a's block too is not replaced there, so
// neither undoes the other at every fill. Before, b rewrote a's block,
// a put it back, and both programs restarted at every refill.
func TestManagedKeysLeaveAnotherModulesBlockAlone(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"true"}})
	a := Request{Module: "a", Whole: true, Files: []File{{Path: "/shared.env", Form: FormManagedBlock, Content: []byte("PORT=80\n"),
		OnChange: OnChange{Action: OnChangeRestart, Unit: "a.service"}}}}
	b := Request{Module: "b", Whole: true, Files: []File{{Path: "/shared.env", Form: FormManagedKeys, Content: []byte("PORT=90\n"),
		OnChange: OnChange{Action: OnChangeRestart, Unit: "b.service"}}}}
	fillOK(t, c, a)
	fillOK(t, c, b)
	want := "# BEGIN mesh a\nPORT=80\n# END mesh a\nPORT=90\n"
	mustRead(t, filepath.Join(root, "shared.env"), want)
	for _, req := range []Request{a, b, a, b} {
		resp := fillOK(t, c, req)
		if resp.Files[0].Action != ActionUnchanged || resp.Program.Action != ProgramNone {
			t.Errorf("module %s again: %+v %+v", req.Module, resp.Files[0], resp.Program)
		}
	}
	mustRead(t, filepath.Join(root, "shared.env"), want)
}
