package fill

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// A file removed, or a block taken out of a shared file, is a change on
// disk: the program its request named is restarted or reloaded, as it
// would be for a write. A whole request that drops an owned file restarts
// its unit (mesh-fill started again meanwhile: the state dir kept the
// program); a DELETE that takes a module's block out of a shared file
// reloads the program reading that file, and a DELETE's own owned files
// start no program (the module leaves with its program).
func TestARemovalTellsTheProgramItsFileChangedOnDisk(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	log := filepath.Join(t.TempDir(), "programs.log")
	srv := func() (*Client, func()) {
		return runUntilStopped(t, &Server{Root: root, StateDir: state, Command: logCommand(log)}, newLog(t))
	}
	c, stop := srv()
	app := OnChange{Action: OnChangeRestart, Unit: "app.service"}
	ssh := OnChange{Action: OnChangeReload, Unit: "ssh.service"}
	fillOK(t, c, Request{Module: "app", Whole: true, Files: []File{
		{Path: "/etc/app/main.conf", Form: FormOwned, Content: []byte("main\n"), OnChange: app},
		{Path: "/etc/app/conf.d/extra.conf", Form: FormOwned, Content: []byte("extra\n"), OnChange: app},
	}})
	fillOK(t, c, Request{Module: "m1", Whole: true, Files: []File{
		{Path: "/etc/ssh/sshd_config", Form: FormManagedBlock, Content: []byte("AllowUsers alice\n"), OnChange: ssh},
		{Path: "/etc/m1/own.conf", Form: FormOwned, Content: []byte("own\n"), OnChange: OnChange{Action: OnChangeRestart, Unit: "m1.service"}},
	}})
	fillOK(t, c, Request{Module: "m2", Whole: true, Files: []File{
		{Path: "/etc/ssh/sshd_config", Form: FormManagedBlock, Content: []byte("Port 2222\n"), OnChange: ssh},
	}})
	before := len(runs(t, log))

	stop()
	c, _ = srv() // a second mesh-fill on the same state dir: the first's programs are known from it
	resp, err := c.Fill(context.Background(), Request{Module: "app", Whole: true, Files: []File{
		{Path: "/etc/app/main.conf", Form: FormOwned, Content: []byte("main\n"), OnChange: app},
	}})
	if err != nil || len(resp.Files) != 2 || resp.Files[1].Action != ActionRemoved {
		t.Fatalf("a whole request dropping a file: %+v, %v", resp, err)
	}
	mustAbsent(t, filepath.Join(root, "etc/app/conf.d/extra.conf"))
	if resp.Program == nil || *resp.Program != (Program{Unit: "app.service", Action: ProgramRestarted}) {
		t.Errorf("a whole request that removed a file answered program %+v, want app.service restarted", resp.Program)
	}
	if got := runs(t, log)[before:]; !slices.Equal(got, []string{"restart app.service"}) {
		t.Errorf("programs run when a file was removed: %q, want one restart of app.service", got)
	}

	// a refill of what is there now changes nothing: nothing runs
	fillOK(t, c, Request{Module: "app", Whole: true, Files: []File{
		{Path: "/etc/app/main.conf", Form: FormOwned, Content: []byte("main\n"), OnChange: app},
	}})
	before = len(runs(t, log))

	var files []FileResult
	files, err = c.Delete(context.Background(), "m1")
	if err != nil || len(files) != 2 {
		t.Fatalf("DELETE m1: %+v, %v", files, err)
	}
	mustRead(t, filepath.Join(root, "etc/ssh/sshd_config"), "# BEGIN mesh m2\nPort 2222\n# END mesh m2\n")
	if got := runs(t, log)[before:]; !slices.Equal(got, []string{"reload ssh.service"}) {
		t.Errorf("programs run when m1 left: %q, want ssh.service reloaded (its block gone) and m1.service not started", got)
	}
}
