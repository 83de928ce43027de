package examples

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// unitKeys is an example unit's settings (systemd/<unit>): each key's
// values in order, comments and continuation lines left out (ExecStart is
// UnitArgs's).
func unitKeys(t *testing.T, unit string) map[string][]string {
	t.Helper()
	b, err := fs.ReadFile(Files, "systemd/"+unit)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, " ") {
			keys[k] = append(keys[k], v)
		}
	}
	return keys
}

// flagOf is the value unit's ExecStart gives flag ("" when none).
func flagOf(t *testing.T, unit, flag string) string {
	t.Helper()
	args, err := UnitArgs(unit)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// TestTheExampleUnitsAgreeOnTheirPaths: what an operator installs from
// examples/systemd works together as it stands: the client dials the
// socket mesh-fill serves, at SPEC §4.3's default, in the directory
// systemd makes for mesh-fill, open to the group the client is given; the
// control socket and both state directories are where SPEC and README
// say and systemd makes them for the process that uses them; the
// credentials each command reads are those its unit loads; the client
// starts after mesh-fill; mesh-fill sets both allow-lists (SPEC §4.3) and
// may write every path they allow (ProtectSystem and ProtectHome leave
// them writable).
func TestTheExampleUnitsAgreeOnTheirPaths(t *testing.T) {
	const (
		client = "mesh-provisioner-client.service"
		server = "mesh-provisioner.service"
		filler = "mesh-fill.service"
	)
	ck, fk, sk := unitKeys(t, client), unitKeys(t, filler), unitKeys(t, server)
	one := func(keys map[string][]string, unit, k string) string {
		t.Helper()
		if len(keys[k]) != 1 {
			t.Errorf("%s: %s=%q, want one", unit, k, keys[k])
			return ""
		}
		return keys[k][0]
	}

	sock := flagOf(t, filler, "--socket")
	if sock != "/run/nox-mesh-host/fill.sock" {
		t.Errorf("mesh-fill serves %q, not SPEC §4.3's /run/nox-mesh-host/fill.sock", sock)
	}
	if got := flagOf(t, client, "--fill-socket"); got != sock {
		t.Errorf("the client dials %q, mesh-fill serves %q", got, sock)
	}
	if dir := "/run/" + one(fk, filler, "RuntimeDirectory"); path.Dir(sock) != dir {
		t.Errorf("mesh-fill's socket %s is not in its RuntimeDirectory %s", sock, dir)
	}
	group := one(fk, filler, "Group")
	if !slices.Contains(strings.Fields(strings.Join(ck["SupplementaryGroups"], " ")), group) {
		t.Errorf("the client is not in mesh-fill's group %q (SupplementaryGroups=%q)", group, ck["SupplementaryGroups"])
	}
	if m, err := strconv.ParseUint(one(fk, filler, "RuntimeDirectoryMode"), 8, 32); err != nil || m&0o010 == 0 || m&0o001 != 0 {
		t.Errorf("mesh-fill's RuntimeDirectoryMode %q: its group must pass, others not", fk["RuntimeDirectoryMode"])
	}
	if !slices.Contains(strings.Fields(strings.Join(ck["After"], " ")), filler) {
		t.Errorf("the client does not start after %s (After=%q)", filler, ck["After"])
	}

	ctl := flagOf(t, client, "--control")
	if ctl != "/run/mesh-provisioner-client/control.sock" {
		t.Errorf("the client's control socket %q, not SPEC §5.5's", ctl)
	}
	if dir := "/run/" + one(ck, client, "RuntimeDirectory"); path.Dir(ctl) != dir {
		t.Errorf("the control socket %s is not in the client's RuntimeDirectory %s", ctl, dir)
	}
	for _, c := range []struct{ unit, want string }{{client, "/var/lib/mesh-provisioner-client"}, {filler, "/var/lib/mesh-fill"}} {
		keys := unitKeys(t, c.unit)
		got := flagOf(t, c.unit, "--state-dir")
		if got != c.want || got != "/var/lib/"+one(keys, c.unit, "StateDirectory") {
			t.Errorf("%s: --state-dir %q, StateDirectory=%q, want both %s", c.unit, got, keys["StateDirectory"], c.want)
		}
		if m := one(keys, c.unit, "StateDirectoryMode"); m != "0700" {
			t.Errorf("%s: StateDirectoryMode=%s, want 0700", c.unit, m)
		}
	}

	for _, c := range []struct {
		unit string
		keys map[string][]string
	}{{client, ck}, {server, sk}} {
		name, _, _ := strings.Cut(one(c.keys, c.unit, "LoadCredential"), ":")
		if got, want := flagOf(t, c.unit, "--creds"), "/run/credentials/"+c.unit+"/"+name; got != want {
			t.Errorf("%s: --creds %q, but the unit loads the credential %q (%s)", c.unit, got, name, want)
		}
	}

	paths, units, err := FillAllowLists()
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 || len(units) == 0 {
		t.Errorf("mesh-fill's unit sets --allow %q and --allow-unit %q: SPEC §4.3 says both", paths, units)
	}
	readOnly := map[string][]string{"yes": {"/usr", "/boot", "/efi"}, "full": {"/usr", "/boot", "/efi", "/etc"}}[one(fk, filler, "ProtectSystem")]
	if one(fk, filler, "ProtectSystem") == "strict" {
		readOnly = []string{"/"}
	}
	if h := one(fk, filler, "ProtectHome"); h == "yes" || h == "read-only" || h == "tmpfs" {
		readOnly = append(readOnly, "/home", "/root", "/run/user")
	}
	writable := strings.Fields(strings.Join(fk["ReadWritePaths"], " "))
	under := func(p string, dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return d == "/" || p == d || strings.HasPrefix(p, d+"/") })
	}
	for _, g := range paths {
		if under(g, readOnly) && !under(g, writable) {
			t.Errorf("mesh-fill may write %s (--allow), but its unit makes it read-only (%v)", g, readOnly)
		}
	}
	if fill.AllowsPath(paths, flagOf(t, filler, "--state-dir")+"/x") {
		t.Errorf("mesh-fill's --allow admits its own state dir")
	}
}

// TestTheExampleUnitsVerify: `systemd-analyze verify` finds nothing to
// say of the example units (an unknown or misspelt setting, a bad value,
// a specifier systemd does not know), their binaries taken as there
// (/bin/true stands for each, as it is not installed here).
func TestTheExampleUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze:", err)
	}
	dir := t.TempDir()
	entries, err := fs.ReadDir(Files, "systemd")
	if err != nil {
		t.Fatal(err)
	}
	var units []string
	for _, e := range entries {
		b, err := fs.ReadFile(Files, "systemd/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		text := regexp.MustCompile(`/usr/local/bin/[a-z-]+`).ReplaceAllString(string(b), "/bin/true")
		p := filepath.Join(dir, e.Name())
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	// Outside a booted systemd (a container, CI) it may say it cannot
	// reach the manager; what it says of a unit names the unit.
	if strings.Contains(string(out), ".service:") || (err != nil && len(out) == 0) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
