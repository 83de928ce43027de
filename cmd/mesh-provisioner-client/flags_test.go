package main

import (
	"strings"
	"testing"
	"time"
)

// A nonsense duration is a usage error naming the flag, before anything
// starts (a negative --refill used to panic in time.NewTicker; a negative
// --refused-retry asked the vault thousands of times a second).
func TestRunRefusesNonsenseDurationsNamingTheFlag(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--refill", "-1s"}, {"--refill", "0s"}, {"--refused-retry", "-1s"}, {"--refused-retry", "0s"},
		{"--fetch-timeout", "0s"},
	} {
		code, _, stderr := runCLI("run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", c.flag, c.value)
		if code != 2 || !strings.Contains(stderr, c.flag+" "+c.value) || !strings.Contains(stderr, "more than zero") {
			t.Errorf("run %s %s: exit %d, stderr %q; want 2 naming the flag", c.flag, c.value, code, stderr)
		}
	}
	code, _, stderr := runCLI("run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", "--fill-gap", "-1s")
	if code != 2 || !strings.Contains(stderr, "--fill-gap -1s: must not be negative") {
		t.Errorf("run --fill-gap -1s: exit %d, stderr %q; want 2 naming the flag", code, stderr)
	}
}

// A password on the command line is seen by every user of the machine in
// the process list: it is refused, pointing at the file and the variable.
func TestRunRefusesAPasswordOnTheCommandLine(t *testing.T) {
	code, _, stderr := runCLI("run", "--node", "ace", "--user", "x", "--password", "hunter2")
	if code != 2 || !strings.Contains(stderr, "--password-file") || !strings.Contains(stderr, "MESH_NATS_PASSWORD") {
		t.Fatalf("exit %d, stderr %q; want 2 and where a password goes instead", code, stderr)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Fatalf("the refusal repeats the password: %q", stderr)
	}
	code, stdout, _ := runCLI("run", "--help")
	if code != 0 || !strings.Contains(stdout, "password-file") || !strings.Contains(stdout, "MESH_NATS_PASSWORD") {
		t.Fatalf("--help: exit %d, does not say where the password goes: %q", code, stdout)
	}
}

// -h, --help and help print the usage and exit 0, on the command and on
// each subcommand; a command that is not one, or graph alone, is a usage
// error that shows the usage.
func TestHelpExitsZeroAndAWrongCommandShowsTheUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"run", "-h"}, {"status", "--help"},
		{"graph", "explain", "-h"}, {"graph", "dot", "--help"}, {"graph", "--help"}, {"graph", "-h"}} {
		if code, stdout, stderr := runCLI(args...); code != 0 || !strings.Contains(stdout+stderr, "usage") && !strings.Contains(stdout+stderr, "Usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage", args, code, stdout, stderr)
		}
	}
	// graph explain's help says it takes a module, not only its flags.
	if _, stdout, stderr := runCLI("graph", "explain", "--help"); !strings.Contains(stdout+stderr, "graph explain [--json] [--control SOCK] <module>") {
		t.Errorf("graph explain --help does not name the module argument: %q", stdout+stderr)
	}
	for _, args := range [][]string{{"graph"}, {"nosuch"}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "usage: mesh-provisioner-client") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the usage", args, code, stderr)
		}
	}
}

// An argument that is no flag is a usage error naming it: the flags after
// it (here --nats and --control) would otherwise be ignored unsaid and
// their defaults used. (The state dir before it cannot be used, so that a
// run that took the argument ends at once rather than running.)
func TestRunRefusesAnArgumentThatIsNoFlag(t *testing.T) {
	code, _, stderr := runCLIWithin(t, "run", "--node", "n3", "--state-dir", unusableDir(t), "extra",
		"--nats", "nats://127.0.0.1:1", "--control", "")
	if code != 2 || !strings.Contains(stderr, `run: unexpected argument "extra"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the argument", code, stderr)
	}
}

// A --nats URL that does not parse is a usage error at start, naming the
// flag (and never a password in the URL), not a failure once running.
func TestRunRefusesANATSURLThatDoesNotParse(t *testing.T) {
	for _, c := range []struct{ url, says string }{
		{"nats://bad host:4222", "invalid character"},
		{"nats://127.0.0.1:port", "invalid port"},
		{"nats://u:hunter2@127.0.0.1:port", "invalid port"},
		{"nats://127.0.0.1:4222,http://127.0.0.1:4222", `scheme "http"`},
		{"nats://:4222", "names no host"},
		{" , ", "names no server"},
	} {
		code, _, stderr := runCLIWithin(t, "run", "--node", "ace", "--nats", c.url, "--control", "",
			"--state-dir", unusableDir(t))
		if code != 2 || !strings.Contains(stderr, "run: --nats") || !strings.Contains(stderr, c.says) {
			t.Errorf("--nats %q: exit %d, stderr %q; want 2, the flag and %q", c.url, code, stderr, c.says)
		}
		if strings.Contains(stderr, "hunter2") {
			t.Errorf("--nats %q: the refusal repeats the password: %q", c.url, stderr)
		}
	}
}

// --fill-gap 0 turns the gap off, as its help says: daemon.Config takes
// its zero as the 5 ms default and keeps a negative gap as none, so the
// flag's 0 must reach it negative.
func TestFillGapZeroIsNoGap(t *testing.T) {
	for flag, want := range map[time.Duration]time.Duration{0: -1, -time.Second: -time.Second, time.Second: time.Second} {
		if got := fillGap(flag); got != want {
			t.Errorf("--fill-gap %v: the daemon is given %v, want %v", flag, got, want)
		}
	}
}

// Every start error of run is said as its flag errors are, "run: …", so a
// journal's line says which command refused what: no --node, a log level
// or a --node out of shape too.
func TestRunSaysEveryStartErrorAsRunsOwn(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"run", "--control", ""}, "run: no --node given: give --node N, this node's name as its assignments' keys <node>.<module> say it"},
		{[]string{"run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", "--log-level", "loud"}, `run: --log-level "loud"`},
		{[]string{"run", "--node", "a/b", "--nats", "nats://127.0.0.1:1", "--control", ""}, `run: --node "a/b"`},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.HasPrefix(stderr, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.says)
		}
	}
}

// An argument an operator's command does not take is a usage error that
// names it, as run's is, before the socket is asked: `graph dot web`
// (the module given without --module) said only the usage, leaving the
// operator to find which word was wrong. And `graph dot web --control S`
// (flags after it, as graph explain takes them) said no hint: the flag
// package stopped at "web" and counted the flags as stray arguments too.
func TestTheOperatorsCommandsNameAStrayArgument(t *testing.T) {
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"status", "extra", "--control", "/nonexistent/c.sock"}, []string{`status: unexpected argument "extra"`, "usage: mesh-provisioner-client status"}},
		{[]string{"graph", "explain", "--control", "/nonexistent/c.sock", "web", "db"}, []string{`graph explain: unexpected argument "db" (one module at a time)`, "usage: mesh-provisioner-client graph explain"}},
		{[]string{"graph", "dot", "--control", "/nonexistent/c.sock", "web"}, []string{`graph dot: unexpected argument "web" (a module is named with --module web)`, "usage: mesh-provisioner-client graph dot"}},
		// The module typed first, as `graph explain web --control S` takes
		// it: the flags after it are read, and the hint given all the same.
		{[]string{"graph", "dot", "web", "--control", "/nonexistent/c.sock"}, []string{`graph dot: unexpected argument "web" (a module is named with --module web)`, "usage: mesh-provisioner-client graph dot"}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing on stdout", c.args, code, stdout)
		}
		for _, s := range c.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: stderr %q lacks %q", c.args, stderr, s)
			}
		}
	}
}

// An empty module name (`graph explain "$MODULE"` with the variable unset)
// is a usage error said before the socket is asked: it was sent and came
// back as the control socket's "name a module: /v1/explain?module=M", exit
// 1, which tells an operator about an HTTP path, not the command.
func TestGraphExplainOfAnEmptyModuleIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"graph", "explain", "--control", "/nonexistent/c.sock", ""},
		{"graph", "explain", "--json", "--control", "/nonexistent/c.sock", ""},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "graph explain: the module's name is empty") ||
			!strings.Contains(stderr, "usage: mesh-provisioner-client graph explain") || strings.Contains(stderr, "/v1/") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, the usage and no HTTP path", args, code, stdout, stderr)
		}
	}
}
