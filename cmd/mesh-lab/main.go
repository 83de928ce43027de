// Command mesh-lab runs the whole example mesh on this machine in one
// process — nats-server, the provisioner server, the dev vault, a fill
// server and a client per example node — so the provisioner can be watched
// at work with nothing installed but Go.
//
//	mesh-lab [--dir ./.lab] [--port 4222] [--keep] [--once] [--settle 1m]
//	    [--log-format console|json] [--log-level warn]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/lab"
)

func main() {
	ppid := os.Getppid()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, func() { stopWithParent(ppid) }))
}

// help heads -h: what the lab is and how it stops, before its flags.
const help = `usage: mesh-lab [--port 4222] [--dir ./.lab] [--keep] [--once] [--settle 1m] [--log-format console|json] [--log-level warn]
runs the example mesh (examples/) on this machine: nats-server, the provisioner server, a dev vault,
and a mesh-fill and a client for each of the nodes ace and g14; it prints the bus's URL, where the
files are and what to try in another terminal. Ctrl-C stops it. --port 0: any free port.
`

// run is the command; watch, when set, is called once the signals that
// stop the lab are caught (main: stopWithParent).
func run(args []string, stdout, stderr io.Writer, watch func()) int {
	fs := flag.NewFlagSet("mesh-lab", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	var cfg lab.Config
	fs.StringVar(&cfg.Dir, "dir", "./.lab", "where the lab keeps its files, sockets and NATS store (its own entries are wiped at start)")
	fs.IntVar(&cfg.Port, "port", 4222, "NATS port on 127.0.0.1 (0: any free port)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep what the last lab left in --dir (files, state, the bus's store) instead of wiping it; its modules' reports are written afresh")
	fs.BoolVar(&cfg.Once, "once", false, "fill, print the summary and exit (non-zero when a module did not settle)")
	fs.DurationVar(&cfg.Settle, "settle", time.Minute, "how long the modules have to settle")
	logFormat := fs.String("log-format", "console", "log format: console or json")
	logLevel := fs.String("log-level", "warn", "log level: "+cli.Levels)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), help)
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	if err := cli.Positive(fs, "settle"); err != nil {
		fmt.Fprintf(stderr, "mesh-lab: %v\n", err)
		return 2
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		fmt.Fprintf(stderr, "mesh-lab: --port %d is not a port\n", cfg.Port)
		return 2
	}
	log, err := cli.Logger(stderr, *logFormat, *logLevel, "mesh-lab")
	if err != nil {
		fmt.Fprintf(stderr, "mesh-lab: %v\n", err)
		return 2
	}
	cfg.Out, cfg.Log = stdout, log

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if watch != nil {
		watch()
	}
	if err := lab.Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "mesh-lab: %v\n", err)
		return 1
	}
	return 0
}
