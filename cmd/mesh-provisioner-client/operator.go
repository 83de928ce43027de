package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
)

// The operator's commands: each asks the running daemon over its control
// socket (SPEC §5.5) and prints the answer for people, or as it came with
// --json.

// errNotRunning marks an answer that did not come because no daemon
// listens on the control socket.
var errNotRunning = errors.New("the daemon is not running")

// controlGet asks the daemon's control socket for path.
func controlGet(sock, path string) ([]byte, int, error) {
	c := daemon.ControlClient(sock, 10*time.Second)
	resp, err := c.Get("http://control" + path)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, 0, fmt.Errorf("%w: there is no control socket %s (start it with `mesh-provisioner-client run`, or name its socket with --control)", errNotRunning, sock)
		case errors.Is(err, syscall.ECONNREFUSED):
			return nil, 0, fmt.Errorf("%w: nothing answers on the control socket %s", errNotRunning, sock)
		case errors.Is(err, os.ErrPermission):
			return nil, 0, fmt.Errorf("control socket %s: permission denied (it is mode 0600: run this as the daemon's user or root)", sock)
		}
		return nil, 0, fmt.Errorf("control socket %s does not answer: %w", sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("control socket %s: reading the answer to %s: %w", sock, path, err)
	}
	return b, resp.StatusCode, nil
}

// ask gets path and says, on stderr, why it could not; ok is false then.
func ask(sock, path string, stderr io.Writer) ([]byte, bool) {
	b, code, err := controlGet(sock, path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	if code != http.StatusOK {
		var ce daemon.ControlError
		if json.Unmarshal(b, &ce) == nil && ce.Error != "" {
			fmt.Fprintln(stderr, ce.Error)
		} else {
			fmt.Fprintf(stderr, "control socket %s: %s answered %d: %s\n", sock, path, code, b)
		}
		return nil, false
	}
	return b, true
}

func status(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	asJSON := fs.Bool("json", false, "print the control socket's JSON, for machines")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: mesh-provisioner-client status [--json] [--control SOCK]")
		return 2
	}
	b, ok := ask(*sock, "/v1/modules", stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		stdout.Write(b)
		return 0
	}
	var m daemon.Modules
	if err := json.Unmarshal(b, &m); err != nil {
		fmt.Fprintf(stderr, "control socket %s: /v1/modules: %v\n", *sock, err)
		return 1
	}
	if err := daemon.WriteStatus(stdout, &m); err != nil {
		return 1
	}
	return 0
}

func explain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	asJSON := fs.Bool("json", false, "print the control socket's JSON, for machines")
	if err := fs.Parse(interspersed(args, "json")); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mesh-provisioner-client graph explain [--json] [--control SOCK] <module>")
		return 2
	}
	b, ok := ask(*sock, "/v1/explain?module="+url.QueryEscape(fs.Arg(0)), stderr)
	if !ok {
		return 1
	}
	if *asJSON {
		stdout.Write(b)
		return 0
	}
	var e daemon.Explanation
	if err := json.Unmarshal(b, &e); err != nil {
		fmt.Fprintf(stderr, "control socket %s: /v1/explain: %v\n", *sock, err)
		return 1
	}
	if err := daemon.WriteExplanation(stdout, &e); err != nil {
		return 1
	}
	return 0
}

func dot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph dot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	mod := fs.String("module", "", "only this module and what it reads")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: mesh-provisioner-client graph dot [--module M] [--control SOCK] | dot -Tsvg > graph.svg")
		return 2
	}
	path := "/v1/graph.dot"
	if *mod != "" {
		path += "?module=" + url.QueryEscape(*mod)
	}
	b, ok := ask(*sock, path, stderr)
	if !ok {
		return 1
	}
	stdout.Write(b)
	return 0
}

// interspersed moves flags given after the module name before it, so
// `graph explain web --json` works as `graph explain --json web` does.
// bools names the flags that take no value.
func interspersed(args []string, bools ...string) []string {
	var flags, rest []string
	isBool := map[string]bool{}
	for _, b := range bools {
		isBool["-"+b], isBool["--"+b] = true, true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if !isBool[a] && !containsByte(a, '=') && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(append(flags, "--"), rest...)
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}
