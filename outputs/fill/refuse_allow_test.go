package fill

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A request out of shape is a 400 saying what is wrong with it also when
// mesh-fill runs with allow-lists (as the example unit does) that do not
// admit it: a relative path, a "..", an unknown form, a bad mode or a unit
// that is no unit's name is the plan's fault, not a path or unit the
// operator left out of --allow or --allow-unit (403).
func TestARequestOutOfShapeIs400EvenOutsideTheAllowLists(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"true"},
		Allow: []string{"/etc/app/**"}, AllowUnits: []string{"app.service"}})
	cases := []struct {
		name, path, form, mode, unit, reason string
	}{
		{"relative", "etc/app/x.conf", FormOwned, "", "", "is relative"},
		{"dotdot", "/srv/../etc/app/x.conf", FormOwned, "", "", ".. element"},
		{"not clean", "/srv//x.conf", FormOwned, "", "", "not clean"},
		{"unknown form", "/srv/x.conf", "templated", "", "", `form "templated"`},
		{"bad mode", "/srv/x.conf", FormOwned, "4755", "", `mode "4755"`},
		{"unit no unit's name", "/etc/app/x.conf", FormOwned, "", "app service", "is not a unit name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := File{Path: tc.path, Form: tc.form, Content: []byte("x\n"), Mode: tc.mode}
			if tc.unit != "" {
				f.OnChange = OnChange{Action: OnChangeRestart, Unit: tc.unit}
			}
			_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{f}})
			var se *StatusError
			if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Msg, tc.reason) {
				t.Fatalf("got %v; want a 400 saying %q", err, tc.reason)
			}
			if strings.Contains(se.Msg, "--allow") {
				t.Errorf("the refusal %q sends the operator to the allow-lists", se.Msg)
			}
		})
	}
	// in shape and outside them: still a 403
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/srv/x.conf", Form: FormOwned, Content: []byte("x\n")}}})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 403 {
		t.Fatalf("a path outside --allow: %v; want 403", err)
	}
	mustAbsent(t, filepath.Join(root, "srv"))
	mustAbsent(t, filepath.Join(root, "etc"))
}
