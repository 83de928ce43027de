package fill

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllowListsRefusePathsAndUnitsOutsideThem: with --allow and
// --allow-unit a request naming a path or unit outside them is a 403 that
// names it, and nothing of the request is written; `*` is one path
// element, `**` any depth, matched below the root.
func TestAllowListsRefusePathsAndUnitsOutsideThem(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root,
		Allow:      []string{"/etc/app/*.conf", "/etc/deep/**", "/etc/ssh/sshd_config"},
		AllowUnits: []string{"app.service", "*.socket"}})
	ok := File{Path: "/etc/app/ok.conf", Form: FormOwned, Content: []byte("ok\n")}
	for _, tc := range []struct {
		f    File
		says string
	}{
		{File{Path: "/etc/app/sub/x.conf", Form: FormOwned}, `path "/etc/app/sub/x.conf" is outside`},
		{File{Path: "/etc/app/x.ini", Form: FormOwned}, `path "/etc/app/x.ini" is outside`},
		{File{Path: "/etc/shadow", Form: FormOwned}, `path "/etc/shadow" is outside`},
		{File{Path: "/etc/ssh/sshd_config.bak", Form: FormOwned}, `path "/etc/ssh/sshd_config.bak" is outside`},
		{File{Path: "/etc/app/y.conf", Form: FormOwned, OnChange: OnChange{Action: OnChangeRestart, Unit: "sshd.service"}}, `unit "sshd.service" is outside`},
	} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{ok, tc.f}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusForbidden || !strings.Contains(se.Msg, tc.says) {
			t.Errorf("%s: want a 403 saying %s, got %v", tc.f.Path, tc.says, err)
		}
		mustAbsent(t, filepath.Join(root, "etc/app/ok.conf"))
	}
	fillOK(t, c, Request{Module: "m", Files: []File{ok,
		{Path: "/etc/deep/a/b/c.conf", Form: FormOwned, Content: []byte("c\n"), OnChange: OnChange{Action: OnChangeNone}},
		{Path: "/etc/ssh/sshd_config", Form: FormManagedBlock, Content: []byte("x\n"), OnChange: OnChange{Action: OnChangeNone, Unit: "x.socket"}},
	}})
	mustRead(t, filepath.Join(root, "etc/deep/a/b/c.conf"), "c\n")
}

// TestAUnitIsNoGlob: a unit holding a glob character is refused (400) and
// nothing run, though --allow-unit matches it: systemctl would restart
// every loaded unit it matches (app*.service, matched by app?.service).
func TestAUnitIsNoGlob(t *testing.T) {
	root := t.TempDir()
	ran := filepath.Join(root, "ran")
	c := startServer(t, &Server{Root: root, AllowUnits: []string{"app?.service"},
		Command: []string{"sh", "-c", `echo "$@" >> "$0"`, ran}})
	refusedAsNoUnitName(t, c, "app*.service", "app?.service")
	mustAbsent(t, filepath.Join(root, "a"))
	mustAbsent(t, ran)
}

// TestWithoutAllowEveryPathIsAllowedAndThatIsSaid: no --allow, no
// --allow-unit: a warning at start for each.
func TestWithoutAllowEveryPathIsAllowedAndThatIsSaid(t *testing.T) {
	log := newLog(t)
	c, _ := runUntilStopped(t, &Server{Root: t.TempDir()}, log)
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/anywhere/at/all", Form: FormOwned}}})
	for _, want := range []string{"no --allow: every path may be written", "no --allow-unit: every unit may be restarted"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, log.String())
		}
	}
	quiet := newLog(t)
	runUntilStopped(t, &Server{Root: t.TempDir(), Allow: []string{"/**"}, AllowUnits: []string{"*"}}, quiet)
	if strings.Contains(quiet.String(), "no --allow") {
		t.Errorf("warned with allow-lists set:\n%s", quiet.String())
	}
}

// An --allow glob written with the root in front allows a path below
// the root's own path again, never what it meant: said at start.
func TestAnAllowGlobBeginningWithTheRootIsWarnedOf(t *testing.T) {
	root := t.TempDir()
	log := newLog(t)
	c, _ := runUntilStopped(t, &Server{Root: root, Allow: []string{root + "/etc/*", "/srv/**"}}, log)
	if _, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/etc/x", Form: FormOwned}}}); err == nil {
		t.Error("/etc/x allowed by a glob of the root's own path")
	}
	if want := "--allow glob begins with --root"; !strings.Contains(log.String(), want) || strings.Count(log.String(), want) != 1 {
		t.Errorf("log does not say %q once (for the one glob):\n%s", want, log.String())
	}
}

func TestCheckAllow(t *testing.T) {
	for _, tc := range []struct {
		glob string
		unit bool
		bad  bool
	}{
		{"/etc/**", false, false}, {"/etc/*.conf", false, false}, {"etc/**", false, true}, {"/etc/[", false, true},
		{"*.service", true, false}, {"a/b", true, true}, {"[", true, true}, {"", true, true},
	} {
		if msg := CheckAllow(tc.glob, tc.unit); (msg != "") != tc.bad {
			t.Errorf("CheckAllow(%q, %v) = %q", tc.glob, tc.unit, msg)
		}
	}
	// each says what is wrong with it
	for glob, says := range map[string]string{"etc/**": "must begin with /", "/etc/[": "syntax error in pattern"} {
		if msg := CheckAllow(glob, false); !strings.Contains(msg, says) {
			t.Errorf("CheckAllow(%q) = %q, want it to say %q", glob, msg, says)
		}
	}
}

// TestADirectoryGlobAllowsWhatIsBelowTheDirectoryNotTheDirectoryItself:
// `--allow /srv/**` confines writes to the tree below /srv; a request
// naming the path /srv itself (a file where the directory should be) is a
// 403 like any other path outside, and nothing of it is written, while
// /srv/a and /srv/a/b are written.
func TestADirectoryGlobAllowsWhatIsBelowTheDirectoryNotTheDirectoryItself(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Allow: []string{"/srv/**", "/opt/*/**"}})
	for _, p := range []string{"/srv", "/opt/app"} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: p, Form: FormOwned, Content: []byte("x\n")}}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusForbidden || !strings.Contains(se.Msg, `path "`+p+`" is outside`) {
			t.Errorf("%s: want a 403 saying it is outside, got %v", p, err)
		}
		mustAbsent(t, filepath.Join(root, p))
	}
	fillOK(t, c, Request{Module: "m", Files: []File{
		{Path: "/srv/a", Form: FormOwned, Content: []byte("a\n"), OnChange: OnChange{Action: OnChangeNone}},
		{Path: "/srv/d/b", Form: FormOwned, Content: []byte("b\n"), OnChange: OnChange{Action: OnChangeNone}},
		{Path: "/opt/app/c", Form: FormOwned, Content: []byte("c\n"), OnChange: OnChange{Action: OnChangeNone}},
	}})
	mustRead(t, filepath.Join(root, "srv/a"), "a\n")
	mustRead(t, filepath.Join(root, "srv/d/b"), "b\n")
	mustRead(t, filepath.Join(root, "opt/app/c"), "c\n")
}
