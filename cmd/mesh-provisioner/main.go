// Command mesh-provisioner is the provisioner server (SPEC §6): once per
// mesh it creates the provisioner's buckets, publishes the registry and
// answers mesh-provisioner.provisioning.
//
//	mesh-provisioner serve --nats URL [--creds F] [--registry-every 1h]
//	    [--replicas 1] [--log-format json|console] [--log-level info]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mesh-provisioner serve --nats URL [--creds F] [--registry-every 1h] [--replicas 1] [--log-format json|console] [--log-level info]")
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("mesh-provisioner serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats", "", "NATS URL of the bus (required)")
	creds := fs.String("creds", "", "NATS credentials file")
	every := fs.Duration("registry-every", time.Hour, "how often the registry is published again")
	replicas := fs.Int("replicas", 1, "replicas of the buckets the server creates")
	logFormat := fs.String("log-format", "json", "log format: json or console")
	logLevel := fs.String("log-level", "info", "log level: trace, debug, info, warn, error")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mesh-provisioner serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *natsURL == "" {
		fmt.Fprintln(stderr, "mesh-provisioner serve: --nats is required")
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
	log, err := cli.Logger(stderr, *logFormat, *logLevel, "mesh-provisioner")
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner serve: %v\n", err)
		return 2
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	err = server.Run(ctx, server.Config{
		NATSURL:       *natsURL,
		Creds:         *creds,
		RegistryEvery: *every,
		Replicas:      *replicas,
		Log:           log,
	})
	if err != nil {
		log.Error().Err(err).Msg("provisioner server failed")
		return 1
	}
	return 0
}
