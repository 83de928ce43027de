package fill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logCommand appends "action unit" to a file for each program run.
func logCommand(log string) []string {
	return []string{"sh", "-c", `echo "$0 $1" >> "` + log + `"`}
}

func runs(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestProgramRunOncePerRequest(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "programs.log")
	var seen []Request
	c := startServer(t, &Server{Root: root, Command: logCommand(log), OnRequest: func(r Request) { seen = append(seen, r) }})

	oc := OnChange{Action: OnChangeRestart, Unit: "claude-code.service"}
	req := Request{Module: "claude-code", Files: []File{
		{Path: "/etc/cc/a.toml", Form: FormOwned, Content: []byte("a"), OnChange: oc},
		{Path: "/etc/cc/b.toml", Form: FormOwned, Content: []byte("b"), OnChange: oc},
	}}
	resp := fillOK(t, c, req)
	if resp.Program == nil || *resp.Program != (Program{Unit: "claude-code.service", Action: ProgramRestarted}) {
		t.Fatalf("program %+v", resp.Program)
	}
	if got := runs(t, log); len(got) != 1 || got[0] != "restart claude-code.service" {
		t.Fatalf("runs %q, want one restart", got)
	}
	if len(seen) != 1 || seen[0].Module != "claude-code" || string(seen[0].Files[1].Content) != "b" {
		t.Errorf("OnRequest saw %+v", seen)
	}

	// nothing changed: nothing run
	resp = fillOK(t, c, req)
	if resp.Program == nil || resp.Program.Action != ProgramNone {
		t.Fatalf("unchanged: program %+v", resp.Program)
	}
	if got := runs(t, log); len(got) != 1 {
		t.Fatalf("runs %q after an unchanged fill", got)
	}

	// one file of two changes: run once more
	req.Files[1].Content = []byte("b2")
	fillOK(t, c, req)
	if got := runs(t, log); len(got) != 2 {
		t.Fatalf("runs %q after one file changed", got)
	}
}

func TestProgramsRestartDominatesReload(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "programs.log")
	c := startServer(t, &Server{Root: root, Command: logCommand(log)})
	req := Request{Module: "m", Files: []File{
		{Path: "/a", Form: FormOwned, Content: []byte("a"), OnChange: OnChange{Action: OnChangeReload, Unit: "one.service"}},
		{Path: "/b", Form: FormOwned, Content: []byte("b"), OnChange: OnChange{Action: OnChangeRestart, Unit: "one.service"}},
		{Path: "/c", Form: FormOwned, Content: []byte("c"), OnChange: OnChange{Action: OnChangeReload, Unit: "two.service"}},
		{Path: "/d", Form: FormOwned, Content: []byte("d"), OnChange: OnChange{Action: OnChangeNone, Unit: "three.service"}},
	}}
	resp := fillOK(t, c, req)
	want := []Program{{"one.service", ProgramRestarted}, {"two.service", ProgramReloaded}, {"three.service", ProgramNone}}
	if len(resp.Programs) != len(want) {
		t.Fatalf("programs %+v", resp.Programs)
	}
	for i := range want {
		if resp.Programs[i] != want[i] {
			t.Errorf("programs[%d] = %+v, want %+v", i, resp.Programs[i], want[i])
		}
	}
	if *resp.Program != want[0] {
		t.Errorf("program %+v", resp.Program)
	}
	got := runs(t, log)
	if strings.Join(got, ";") != "restart one.service;reload two.service" {
		t.Errorf("runs %q", got)
	}
}

func TestProgramFailureIs500AndFilesStay(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"sh", "-c", `echo "unit $1 is masked" >&2; exit 3`}})
	req := Request{Module: "m", Files: []File{{Path: "/etc/x", Form: FormOwned, Content: []byte("s3cr3t"), OnChange: OnChange{Action: OnChangeRestart, Unit: "x.service"}}}}
	_, err := c.Fill(t.Context(), req)
	if err == nil {
		t.Fatal("a failing command was not reported")
	}
	msg := err.Error()
	if !strings.Contains(msg, "500") || !strings.Contains(msg, "unit x.service is masked") || !strings.Contains(msg, "x.service") {
		t.Errorf("error %q should be a 500 with the command's reason", msg)
	}
	if strings.Contains(msg, "s3cr3t") {
		t.Errorf("content in the error: %q", msg)
	}
	if s := readFile(t, filepath.Join(root, "etc/x")); s != "s3cr3t" {
		t.Errorf("file not left written: %q", s)
	}
}
