package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPositiveRefusesZeroAndNegativeNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" when accepted
	}{
		{nil, ""},
		{[]string{"--refill", "1s", "--tries", "3"}, ""},
		{[]string{"--refill", "-1s"}, "--refill -1s: must be more than zero"},
		{[]string{"--refill", "0s"}, "--refill 0s: must be more than zero"},
		{[]string{"--tries", "0"}, "--tries 0: must be more than zero"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Duration("refill", time.Minute, "")
		fs.Int("tries", 1, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := Positive(fs, "refill", "tries")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: refused: %v", c.args, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

func TestAPasswordIsTakenFromAFileOrTheEnvironmentNeverTheCommandLine(t *testing.T) {
	parse := func(args ...string) (func() (string, error), error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		pw := PasswordFlags(fs)
		return pw, fs.Parse(args)
	}
	for _, args := range [][]string{{"--password", "hunter2"}, {"-password=hunter2"}, {"--node", "a", "--password=hunter2"}} {
		err := RefusePasswordArg(args)
		if err == nil || !strings.Contains(err.Error(), "--password-file") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: %v, want a refusal pointing at --password-file, without the password", args, err)
		}
	}
	if err := RefusePasswordArg([]string{"--password-file", "f", "--", "--password"}); err != nil {
		t.Fatalf("--password-file refused: %v", err)
	}
	f := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PasswordEnv, "from-env")
	pw, err := parse("--password-file", f)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pw(); err != nil || got != "s3cret" {
		t.Fatalf("from the file: %q, %v", got, err)
	}
	pw, _ = parse()
	if got, _ := pw(); got != "from-env" {
		t.Fatalf("from $%s: %q", PasswordEnv, got)
	}
	pw, _ = parse("--password-file", filepath.Join(t.TempDir(), "absent"))
	if _, err := pw(); err == nil || !strings.Contains(err.Error(), "--password-file") {
		t.Fatalf("an absent file: %v", err)
	}
}

func TestParseRefusesPositionalArgumentsNamingTheCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		ok   bool
		says string
	}{
		{[]string{"--n", "3"}, 0, true, ""},
		{[]string{"-h"}, 0, false, "Usage"},
		{[]string{"--nope"}, 2, false, "nope"},
		{[]string{"--n", "3", "extra"}, 2, false, `tool run: unexpected argument "extra"`},
	} {
		fs := flag.NewFlagSet("tool run", flag.ContinueOnError)
		var stderr strings.Builder
		fs.SetOutput(&stderr)
		fs.Int("n", 1, "a count")
		code, ok := Parse(fs, c.args, &stderr)
		if code != c.code || ok != c.ok || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%q: code %d ok %v stderr %q; want %d %v naming %q", c.args, code, ok, stderr.String(), c.code, c.ok, c.says)
		}
	}
}

// A duration without its unit ("10") is refused with a hint of what a
// duration looks like (the flag package says only "parse error"); a bad
// number for another flag gets no such hint.
func TestParseSaysADurationTakesItsUnit(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint bool
	}{
		{[]string{"--stood-after", "10"}, true},
		{[]string{"--stood-after", "ten minutes"}, true},
		{[]string{"--tries", "x"}, false},
	} {
		fs := flag.NewFlagSet("mesh-provisioner sweep", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Duration("stood-after", time.Minute, "")
		fs.Int("tries", 1, "")
		var stderr strings.Builder
		code, ok := Parse(fs, c.args, &stderr)
		if ok || code != 2 {
			t.Errorf("%v: accepted (%d)", c.args, code)
		}
		said := strings.Contains(stderr.String(), "--stood-after takes a duration with its unit, e.g. 90s, 10m, 1h")
		if said != c.hint {
			t.Errorf("%v: stderr %q (hint wanted: %v)", c.args, stderr.String(), c.hint)
		}
	}
}

// A password in --nats is warned of however the URL is written: with a
// scheme, without one (nats.go takes "user:pw@host:4222" as a nats://
// URL, as CheckURLs does), or as one of a list; the warning never holds
// the password. A user with no password is a token to NATS (nats://tok@h),
// warned of too (an outside audit); a URL with neither is no warning.
func TestAPasswordInAnyNATSURLIsWarnedOfWithoutSayingIt(t *testing.T) {
	for _, urls := range []string{"nats://u:s3cret@h:4222", "u:s3cret@h:4222", "nats://h:4222, u:s3cret@h2", "tls://u:s3cret@h",
		"nats://s3cret@h:4222", "s3cret@h:4222", "nats://h, s3cret@h2"} {
		w := URLPasswordWarning(urls, "instead")
		if w == "" || strings.Contains(w, "s3cret") {
			t.Errorf("%q: warning %q, want one not holding the password", urls, w)
		}
	}
	for _, urls := range []string{"nats://h:4222", "h:4222", "nats://h, h2"} {
		if w := URLPasswordWarning(urls, "instead"); w != "" {
			t.Errorf("%q: warned %q", urls, w)
		}
	}
}

// A --user with no password is refused, saying where the password goes;
// a password given, or no --user, passes.
func TestCheckUserPasswordRefusesAUserWithNoPassword(t *testing.T) {
	err := CheckUserPassword("provisioner-n1", "")
	want := "--user provisioner-n1 has no password: give --password-file F (its first line the password) or set $MESH_NATS_PASSWORD"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if err := CheckUserPassword("provisioner-n1", "dev-only-provisioner-n1"); err != nil {
		t.Errorf("a user with a password refused: %v", err)
	}
	if err := CheckUserPassword("", ""); err != nil {
		t.Errorf("no --user refused: %v", err)
	}
}
