// Command mesh-provisioner-client is the node daemon: it turns the
// provisioning plans of this node's modules into files (run), and tells an
// operator why a file waits (graph explain, graph dot, status).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

const defaultControl = "/run/mesh-provisioner-client/control.sock"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage names each command with its flags (SPEC §7's and ours), as
// mesh-provisioner's does; each command's -h says what they mean.
const usage = `usage: mesh-provisioner-client run --node N --nats URL [--creds F] [--fill-socket S] [--state-dir D] [--control SOCK] [--refill 1m]
           [--fill-gap 5ms] [--fetch-timeout 30s] [--fill-timeout 5m] [--templates-root DIR] [--refused-retry 10m] [--huge-pages=false]
           [--user U --password-file F | --nkey F] [--log-format json|console] [--log-level info]
       mesh-provisioner-client status [--control SOCK] [--json]
       mesh-provisioner-client graph explain [--json] [--control SOCK] <module>
       mesh-provisioner-client graph dot [--module M] [--control SOCK]
each command with -h says what its flags mean`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if isHelp(args[0]) {
		fmt.Fprintln(stdout, usage)
		return 0
	}
	switch args[0] {
	case "run":
		return runDaemon(args[1:], stdout, stderr)
	case "status":
		return status(args[1:], stdout, stderr)
	case "graph":
		if len(args) > 1 && args[1] == "explain" {
			return explain(args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "dot" {
			return dot(args[2:], stdout, stderr)
		}
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprintln(stdout, usage)
			return 0
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "unknown graph command %q: graph explain <module> or graph dot\n%s\n", args[1], usage)
			return 2
		}
		fmt.Fprintln(stderr, "graph needs explain <module> or dot\n"+usage)
		return 2
	case "explain":
		// SPEC §5.5 calls them "graph explain" and "graph dot": the word
		// an operator remembers is the second.
		fmt.Fprintf(stderr, "unknown command %q: it is \"mesh-provisioner-client graph explain <module>\"\n%s\n", args[0], usage)
		return 2
	case "dot":
		fmt.Fprintf(stderr, "unknown command %q: it is \"mesh-provisioner-client graph dot\"\n%s\n", args[0], usage)
		return 2
	}
	fmt.Fprintf(stderr, "unknown command %q\n%s\n", args[0], usage)
	return 2
}

// usageOf is a command's -h: "Usage of mesh-provisioner-client run:" and
// its flags (the flag package's own would say "Usage of run:", naming no
// program).
func usageOf(fs *flag.FlagSet) func() {
	return func() {
		fmt.Fprintf(fs.Output(), "Usage of mesh-provisioner-client %s:\n", fs.Name())
		fs.PrintDefaults()
	}
}

// isHelp says whether arg asks for the usage (the command's, or graph's).
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

func runDaemon(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	fs.Usage = usageOf(fs)
	var cfg daemon.Config
	fs.StringVar(&cfg.Node, "node", "", "this node's name (required)")
	fs.StringVar(&cfg.Bus.URL, "nats", "", "NATS URL(s), comma-separated (required)")
	fs.StringVar(&cfg.Bus.Creds, "creds", "", "NATS credentials file")
	fs.StringVar(&cfg.Bus.User, "user", "", "NATS user (its password from --password-file or $"+cli.PasswordEnv+")")
	password := cli.PasswordFlags(fs)
	fs.StringVar(&cfg.Bus.NKeySeedFile, "nkey", "", "NATS nkey seed file")
	fs.StringVar(&cfg.FillSocket, "fill-socket", "/run/nox-mesh-host/fill.sock", "the node-engine's fill socket")
	fs.StringVar(&cfg.StateDir, "state-dir", "/var/lib/mesh-provisioner-client", "where templates archives are kept by digest, the removals mesh-fill has not answered yet and the bindings of plans that do not parse; one client's: another on it exits 2 (empty: the default)")
	fs.StringVar(&cfg.Control, "control", defaultControl, "the control socket (empty: none)")
	fs.DurationVar(&cfg.Refill, "refill", time.Minute, "every filled file is sent again this often")
	fs.DurationVar(&cfg.FillGap, "fill-gap", daemon.DefaultFillGap,
		"a module is filled at most once per this; faster changes go out together in its next fill (0: no gap)")
	fs.DurationVar(&cfg.RefusedRetry, "refused-retry", 10*time.Minute, "a secret the vault refused is asked again after this")
	fs.DurationVar(&cfg.FetchTimeout, "fetch-timeout", daemon.DefaultFetchTimeout,
		"one try of fetching a templates archive gives up after this (and is tried again)")
	fs.DurationVar(&cfg.FillTimeout, "fill-timeout", fill.DefaultTimeout,
		"a fill request the node-engine has not answered within this fails its module \"not answering\" (and is sent again); longer than a slow program restart")
	fs.StringVar(&cfg.TemplatesRoot, "templates-root", "",
		"file:// templates refs must name a file below this directory (default: anywhere the client can read)")
	logFormat := fs.String("log-format", "json", "json or console")
	logLevel := fs.String("log-level", "info", "log level: "+cli.Levels)
	hugePages := fs.Bool("huge-pages", true,
		"once the cold start is answered, collapse the heap's dense stretches into huge pages (Linux 6.1+; skipped when the machine's are never): a large idle node wakes cheaper")
	if err := cli.RefusePasswordArg(args); err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	// An argument that is no flag is refused: the flag package stops at
	// it, and the flags after it would be ignored unsaid.
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	if err := cli.Positive(fs, "refill", "refused-retry", "fetch-timeout", "fill-timeout"); err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	if cfg.FillGap < 0 { // 0 is a gap of none; a negative one was taken unsaid
		fmt.Fprintf(stderr, "run: --fill-gap %s: must not be negative (0: no gap)\n", cfg.FillGap)
		return 2
	}
	if cfg.Node == "" { // said with what to give (daemon.New says only that it is missing)
		fmt.Fprintln(stderr, "run: no --node given: give --node N, this node's name as its assignments' keys <node>.<module> say it")
		return 2
	}
	if cfg.Bus.URL == "" {
		// SPEC §7: no optional flag, as --node is none. A default bus
		// would have a unit that lost the flag wait on 127.0.0.1:4222
		// for ever, or fill from whatever bus answers there.
		fmt.Fprintln(stderr, "run: --nats is required: give --nats URL, the bus's URL(s), comma-separated")
		return 2
	}
	cfg.FillGap = fillGap(cfg.FillGap)
	if err := bus.CheckURLs(cfg.Bus.URL); err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	if cfg.TemplatesRoot != "" {
		abs, err := filepath.Abs(cfg.TemplatesRoot)
		if err != nil {
			fmt.Fprintln(stderr, "run: --templates-root:", err)
			return 2
		}
		cfg.TemplatesRoot = abs
	}
	pw, err := password()
	if err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	if err := cli.CheckUserPassword(cfg.Bus.User, pw); err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	cfg.Bus.Password = pw
	log, err := cli.Logger(os.Stderr, *logFormat, *logLevel, "mesh-provisioner-client")
	if err != nil {
		fmt.Fprintln(stderr, "run:", err)
		return 2
	}
	if w := cli.URLPasswordWarning(cfg.Bus.URL, "give it with --user and --password-file F (or $"+cli.PasswordEnv+"), or use --creds"); w != "" {
		log.Warn().Msg(w)
	}
	if cfg.Bus.Creds != "" {
		// A bad creds file, or another node's, would only show as a
		// connection refused or requests unanswered, retried forever: name
		// it now (its mode is warned of on connecting).
		if _, err := bus.CheckCreds(cfg.Bus.Creds, time.Now(), bus.InboxPrefix(daemon.BusName(cfg.Node))); err != nil {
			fmt.Fprintln(stderr, "run:", err)
			return 2
		}
	}
	cfg.Log = log
	huge := newHugeHeap(*hugePages, thpSetting, log)
	pacer := tuneGC()
	pacer.afterEach(huge.collected)
	cfg.OnSettled = afterColdStart(pacer, huge)
	d, err := daemon.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "run:", err) // --node, --control: a flag's error as the others
		return 2
	}
	if cfg.Control != "" {
		// Before the bus is taken (and prov.ask answered for the node): a
		// --control another client answers on, or that cannot be one, is a
		// start error as a state dir in use is.
		if err := control.Check(cfg.Control); err != nil {
			fmt.Fprintln(stderr, "run:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer cli.IgnoreHangup(log)()
	// Said as the signal comes, before the fills in flight are cancelled
	// and the bus connection drained: the next lines are those of the
	// stop, not of a fault (an outside audit read "disconnected" first).
	defer context.AfterFunc(ctx, func() { log.Info().Msg("stopping: SIGTERM or SIGINT") })()
	if err := d.Run(ctx); err != nil {
		if se := (*daemon.StartError)(nil); errors.As(err, &se) {
			fmt.Fprintln(stderr, "run:", err) // the state dir: a start check as the flags'
			return 2
		}
		log.Error().Err(err).Msg("stopped")
		return 1
	}
	log.Info().Msg("stopped")
	return 0
}

// fillGap is --fill-gap as daemon.Config takes it: an operator's 0 turns
// the gap off, where Config's zero is its default (5 ms), so it is said
// as a negative gap, which Config keeps as none.
func fillGap(flag time.Duration) time.Duration {
	if flag == 0 {
		return -1
	}
	return flag
}
