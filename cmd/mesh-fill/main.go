// Command mesh-fill is the node-engine side of the fill socket (SPEC §4.3)
// for the lab, tests and machines without mesh-host. It exits 2 when it
// cannot start: a flag out of shape, a --state-dir that is the --root (every
// request would be refused), another mesh-fill on its --state-dir, a state
// file it cannot trust (the message names it and how to recover).
// SIGINT and SIGTERM stop it (exit 0); SIGHUP is logged and ignored.
//
//	mesh-fill serve --socket PATH [--root DIR] [--state-dir DIR] [--allow GLOB]… [--allow-unit GLOB]… [--on-change-command "CMD ARGS"] [--allow-uid UID,…] [--syncfs-from N] [--max-requests N] [--max-conns N] [--log-format json|console] [--log-level info]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: the usage is printed
		fmt.Fprintln(os.Stderr, "mesh-fill:", err)
		os.Exit(2)
	}
}

// globs is a repeatable flag.
type globs []string

func (g *globs) String() string     { return strings.Join(*g, " ") }
func (g *globs) Set(v string) error { *g = append(*g, v); return nil }

const usage = "usage: mesh-fill serve --socket PATH [--root DIR] [--state-dir DIR] [--allow GLOB]… [--allow-unit GLOB]… [--on-change-command \"CMD ARGS\"] [--allow-uid UID,…] [--syncfs-from N] [--max-requests N] [--max-conns N] [--log-format json|console] [--log-level info]"

// run is mesh-fill; after -h, --help or help it prints the usage and returns
// flag.ErrHelp, which main does not count as a failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stdout, usage+"\nmesh-fill serve -h says what its flags mean")
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return errors.New(usage)
	}
	if args[0] != "serve" { // named, as mesh-provisioner and the client name theirs
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
	fs := flag.NewFlagSet("mesh-fill serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", fill.DefaultSocket, "unix socket to listen on")
	root := fs.String("root", "", "confine every file to this directory")
	command := fs.String("on-change-command", "", "run this instead of systemctl (split on spaces, no quoting: use a script for more); gets action and unit appended")
	logFormat := fs.String("log-format", "json", "json or console")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (debug adds each file found unchanged, each connection refused)")
	allow := fs.String("allow-uid", "", "comma-separated uids: only peers running as one of them may fill (SO_PEERCRED); empty: the socket's mode 0660 decides")
	syncFrom := fs.Int("syncfs-from", fill.DefaultSyncFSFrom, "a request writing at least this many files is made durable with one syncfs per filesystem (before and after its renames) instead of an fsync per file and directory: much faster for many files, but it flushes whatever else is dirty there too; 0: always fsync each file")
	maxRequests := fs.Int("max-requests", fill.DefaultMaxRequests, "requests processed at once (each holds its body, up to ~86 MB, and its files decoded while it is); more wait for one to end, up to the read timeout (2 min), then are answered 503")
	maxConns := fs.Int("max-conns", fill.DefaultMaxConns, "connections held at once (idle, waiting for one of --max-requests, or being read); one more takes the place of an idle one, or is answered 503 and closed at once when none is")
	stateDir := fs.String("state-dir", "/var/lib/mesh-fill", "where what was written for which module is kept (made 0700 when missing); one mesh-fill at a time (it locks it), and it does not start on a state file it cannot read: the error names the file and what to do")
	var allowPaths, allowUnits globs
	fs.Var(&allowPaths, "allow", "a glob of the paths requests may name (repeatable; * one path element, ** any depth; below --root when set; without it, where a path leads through its parents' symlinks must match too); none: every path, said at start")
	fs.Var(&allowUnits, "allow-unit", "a glob of the units requests may restart or reload (repeatable); none: every unit, said at start")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage); fs.PrintDefaults() }
	// The flag package would say a bad flag before its list, and main
	// says it again after: the list, then main's line, once.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil {
		fs.SetOutput(cli.UsageOut(args[1:], stdout, stderr)) // -h: the list on stdout
		fs.Usage()
		return err
	}
	fs.SetOutput(stderr)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *syncFrom < 0 {
		return fmt.Errorf("--syncfs-from %d: want 0 (never) or a number of files", *syncFrom)
	}
	if *maxRequests < 1 {
		return fmt.Errorf("--max-requests %d: want 1 or more", *maxRequests)
	}
	if *maxConns < 1 {
		return fmt.Errorf("--max-conns %d: want 1 or more", *maxConns)
	}
	for _, g := range allowPaths {
		if msg := fill.CheckAllow(g, false); msg != "" {
			return errors.New(msg)
		}
	}
	for _, g := range allowUnits {
		if msg := fill.CheckAllow(g, true); msg != "" {
			return errors.New(msg)
		}
	}
	if *socket == "" { // a unit's variable left empty: said now, not as a bind's rename error after the state dir was taken
		return errors.New("--socket: empty; name the unix socket mesh-fill listens on (default " + fill.DefaultSocket + ")")
	}
	if *stateDir == "" {
		return errors.New("--state-dir: empty; mesh-fill keeps what it wrote for which module there")
	}
	if *syncFrom == 0 {
		*syncFrom = -1 // fill.Server's "never"
	}

	var uids []int
	for _, f := range strings.Split(*allow, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		uid, err := strconv.Atoi(f)
		if err != nil || uid < 0 {
			return fmt.Errorf("--allow-uid: %q is not a uid", f)
		}
		uids = append(uids, uid)
	}

	// A command that is not there would be found only at the first
	// restart, after its file was written: say it now.
	cmdArgs := strings.Fields(*command)
	if len(cmdArgs) > 0 {
		if _, err := exec.LookPath(cmdArgs[0]); err != nil {
			return fmt.Errorf("--on-change-command: %w", err)
		}
	}

	// The commands' one logger (cmd/internal/cli): its time is UTC to the
	// millisecond, so this log and the client's line up side by side.
	log, err := cli.Logger(stderr, *logFormat, *logLevel, "mesh-fill")
	if err != nil {
		return err
	}
	defer cli.IgnoreHangup(log)() // SIGHUP would kill it (exit 129, socket left); SIGINT and SIGTERM stop it

	srv := &fill.Server{Root: *root, Command: cmdArgs, Log: log, AllowUIDs: uids, SyncFSFrom: *syncFrom,
		Allow: allowPaths, AllowUnits: allowUnits, StateDir: *stateDir, MaxRequests: *maxRequests, MaxConns: *maxConns}
	return srv.Serve(ctx, *socket)
}
