// Command mesh-provisioner is the provisioner server (SPEC §6): once per
// mesh it creates the provisioner's buckets, publishes the registry and
// answers mesh-provisioner.provisioning; its sweep command asks that verb
// what holds the mesh back; its rights command prints the bus rights of
// each role (nodes/spec RightsOf) for a nats-server configuration or nsc.
// serve and sweep log in with --creds, or as a password user (those of
// examples/nats/server.conf) with --user and its password from
// --password-file or $MESH_NATS_PASSWORD, never on the command line.
//
//	mesh-provisioner serve --nats URL [--creds F | --user U --password-file F] [--registry-every 1h]
//	    [--replicas 1] [--metrics ADDR] [--log-format json|console] [--log-level info]
//	mesh-provisioner sweep --nats URL [--creds F | --user U --password-file F] [--node N] [--module M]
//	    [--stood-after 10m] [--json] [--inbox P]
//	mesh-provisioner rights --role R [--node N] [--provider P,...] [--format conf|nsc|json]
//	mesh-provisioner rights --all --node N,... --provider P,... [--format conf|nsc|json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mesh-provisioner serve --nats URL [--creds F | --user U --password-file F] [--registry-every 1h] [--replicas 1] [--metrics ADDR] [--log-format json|console] [--log-level info]")
	fmt.Fprintln(w, "       mesh-provisioner sweep --nats URL [--creds F | --user U --password-file F] [--node N] [--module M] [--stood-after 10m] [--json] [--inbox P]")
	fmt.Fprintln(w, "       mesh-provisioner rights --role R [--node N] [--provider P,...] [--format conf|nsc|json] [--account MESH]")
	fmt.Fprintln(w, "       mesh-provisioner rights --all --node N,... --provider P,... [--format conf|nsc|json]")
	fmt.Fprintln(w, "a --user's password comes from --password-file or $"+cli.PasswordEnv+"; a --password on the command line is refused")
	fmt.Fprintln(w, "each command with -h says what its flags mean")
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "sweep":
		return sweep(args[1:], stdout, stderr)
	case "rights":
		return rightsCmd(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "mesh-provisioner: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// checkMetricsAddr refuses a --metrics that is no host:port a listener
// could take (empty: none asked): a port out of 0-65535 or a service
// name this machine does not know would otherwise pass the flags and end
// the started server with exit 1, which its supervisor takes for a
// failed run and starts again and again, rather than a usage error.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--metrics %q is not host:port: %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--metrics %q: port %q is no TCP port (a number 0-65535): %v", addr, port, err)
	}
	return nil
}

// checkCreds names a creds file that is missing, unreadable, malformed or
// expired (inputs/bus CheckCreds), as the client does: the bus would
// otherwise only refuse the connection, retried for ever. inbox, when not
// empty, is the reply prefix the command connects with: creds whose user
// may not hear it (another role's) are named too. Empty path: none.
func checkCreds(path, inbox string) error {
	if path == "" {
		return nil
	}
	_, err := bus.CheckCreds(path, time.Now(), inbox) // its mode is warned of on connecting
	return err
}

// login is the password of --user (cli.PasswordFlags' password): a
// --password-file that cannot be read, or a --user with no password, is a
// start error (cli.CheckUserPassword).
func login(user string, password func() (string, error)) (string, error) {
	pw, err := password()
	if err != nil {
		return "", err
	}
	return pw, cli.CheckUserPassword(user, pw)
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mesh-provisioner serve", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	natsURL := fs.String("nats", "", "NATS URL of the bus (required)")
	creds := fs.String("creds", "", "NATS credentials file")
	user := fs.String("user", "", "NATS user (its password from --password-file or $"+cli.PasswordEnv+")")
	password := cli.PasswordFlags(fs)
	every := fs.Duration("registry-every", time.Hour, "how often the registry is published again")
	replicas := fs.Int("replicas", 1, "replicas of the buckets the server creates")
	metrics := fs.String("metrics", "", "serve Prometheus /metrics at this address (host:port)")
	logFormat := fs.String("log-format", "json", "log format: json or console")
	logLevel := fs.String("log-level", "info", "log level: "+cli.Levels)
	if err := cli.RefusePasswordArg(args); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	if *natsURL == "" {
		fmt.Fprintln(stderr, "mesh-provisioner serve: --nats is required")
		return 2
	}
	if err := bus.CheckURLs(*natsURL); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}
	if err := checkMetricsAddr(*metrics); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}
	if *every <= 0 {
		fmt.Fprintln(stderr, "mesh-provisioner serve: --registry-every must be positive")
		return 2
	}
	if *replicas < 1 {
		fmt.Fprintln(stderr, "mesh-provisioner serve: --replicas must be at least 1")
		return 2
	}
	// serve connects as server.BusName, so its inbox is known now: creds
	// of another role are a start error (exit 2), not a failed run that
	// its supervisor would start again and again.
	if err := checkCreds(*creds, bus.InboxPrefix(server.BusName)); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}
	pw, err := login(*user, password)
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}
	log, err := cli.Logger(stderr, *logFormat, *logLevel, "mesh-provisioner")
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}

	if w := cli.URLPasswordWarning(*natsURL, "give the server a creds file with --creds, or --user with --password-file F (or $"+cli.PasswordEnv+"), instead"); w != "" {
		log.Warn().Msg(w)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	defer cli.IgnoreHangup(log)()
	err = server.Run(ctx, server.Config{
		NATSURL:       *natsURL,
		Creds:         *creds,
		User:          *user,
		Password:      pw,
		RegistryEvery: *every,
		Replicas:      *replicas,
		Metrics:       *metrics,
		Log:           log,
	})
	if err != nil {
		ev := log.Error().Err(err)
		if hint := loginHint(err, *creds, *user, *natsURL, "the server's user mesh-provisioner", spec.RoleServer); hint != "" {
			ev = ev.Str("hint", strings.TrimSuffix(strings.TrimPrefix(hint, " ("), ")"))
		}
		ev.Msg("provisioner server failed")
		return 1
	}
	return 0
}
