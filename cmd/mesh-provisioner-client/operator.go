package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The operator's commands: each asks the running daemon over its control
// socket (SPEC §5.5) and prints the answer for people, or as it came with
// --json.

// ask runs q against the control socket sock and says, on stderr, why it
// could not (escaped: it may name what the bus or the operator said); ok
// is false then.
func ask[T any](sock string, stderr io.Writer, q func(c *control.Client, ctx context.Context) (T, error)) (T, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := q(control.NewClient(sock, 10*time.Second), ctx)
	if err != nil {
		fmt.Fprintln(stderr, control.Escape(err.Error()))
		return v, false
	}
	return v, true
}

// askJSON is ask for a --json command: its failure is also said on
// stdout as {"error": "…"}, so a machine reading stdout reads JSON either
// way (it read nothing, and the exit status alone).
func askJSON(sock string, stdout, stderr io.Writer, q func(c *control.Client, ctx context.Context) ([]byte, error)) int {
	var failed error
	b, ok := ask(sock, stderr, func(c *control.Client, ctx context.Context) ([]byte, error) {
		b, err := q(c, ctx)
		failed = err
		return b, err
	})
	if !ok {
		e, _ := json.Marshal(map[string]string{"error": failed.Error()})
		stdout.Write(append(control.JSONSafe(e), '\n'))
		return 1
	}
	stdout.Write(b)
	return 0
}

func status(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	fs.Usage = usageOf(fs)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	asJSON := fs.Bool("json", false, "print the control socket's JSON, for machines")
	if err := fs.Parse(args); err != nil {
		return cli.UsageExit(err)
	}
	if fs.NArg() != 0 {
		stray(stderr, "status", fs.Arg(0), "", "usage: mesh-provisioner-client status [--json] [--control SOCK]")
		return 2
	}
	if *asJSON {
		return askJSON(*sock, stdout, stderr, (*control.Client).ModulesJSON)
	}
	m, ok := ask(*sock, stderr, (*control.Client).Modules)
	if !ok {
		return 1
	}
	if err := control.WriteStatus(stdout, m); err != nil {
		return 1
	}
	return 0
}

func explain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph explain", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	asJSON := fs.Bool("json", false, "print the control socket's JSON, for machines")
	const explainUsage = "usage: mesh-provisioner-client graph explain [--json] [--control SOCK] <module>"
	fs.Usage = func() { // -h: the module argument too, not only the flags
		fmt.Fprintln(fs.Output(), explainUsage)
		fs.PrintDefaults()
	}
	err := fs.Parse(interspersed(args, "json"))
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil { // the flag package said what and printed the usage
		return 2
	}
	if fs.NArg() > 1 {
		stray(stderr, "graph explain", fs.Arg(1), "one module at a time", explainUsage)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, explainUsage)
		return 2
	}
	module := fs.Arg(0)
	if module == "" { // "$MODULE" unset: said here, not as the socket's HTTP path
		fmt.Fprintf(stderr, "graph explain: the module's name is empty\n%s\n", explainUsage)
		return 2
	}
	if *asJSON {
		return askJSON(*sock, stdout, stderr, func(c *control.Client, ctx context.Context) ([]byte, error) { return c.ExplainJSON(ctx, module) })
	}
	e, ok := ask(*sock, stderr, func(c *control.Client, ctx context.Context) (*control.Explanation, error) {
		return c.Explain(ctx, module)
	})
	if !ok {
		return 1
	}
	if err := control.WriteExplanation(stdout, e); err != nil {
		return 1
	}
	return 0
}

func dot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph dot", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	fs.Usage = usageOf(fs)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	mod := fs.String("module", "", "only this module and what it reads")
	// Flags after a stray word are read too (as graph explain reads them),
	// so `graph dot web --control S` is said with its hint below.
	if err := fs.Parse(interspersed(args)); err != nil {
		return cli.UsageExit(err)
	}
	if fs.NArg() != 0 {
		hint := ""
		if *mod == "" && fs.NArg() == 1 { // the module given as `graph explain` takes it
			hint = "a module is named with --module " + fs.Arg(0)
		}
		stray(stderr, "graph dot", fs.Arg(0), hint, "usage: mesh-provisioner-client graph dot [--module M] [--control SOCK] | dot -Tsvg > graph.svg")
		return 2
	}
	b, ok := ask(*sock, stderr, func(c *control.Client, ctx context.Context) ([]byte, error) { return c.DOT(ctx, *mod) })
	if !ok {
		return 1
	}
	// The encoder ends at the closing brace: ended as a text file is, so
	// `graph dot > graph.dot` and a terminal end their last line.
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	stdout.Write(b)
	if rest, ok := bytes.CutPrefix(b, []byte(control.NotReadyDOT)); ok { // said for people too, as explain says it
		why, _, _ := bytes.Cut(rest, []byte("\n"))
		fmt.Fprintf(stderr, "Not ready (%s): this is what the client last knew.\n", control.Escape(string(why)))
	}
	return 0
}

// stray says that command does not take the argument arg (escaped: it
// is as typed), with hint when there is one, and then the usage.
func stray(stderr io.Writer, command, arg, hint, usage string) {
	if hint != "" {
		hint = " (" + hint + ")"
	}
	fmt.Fprintf(stderr, "%s: unexpected argument %q%s\n%s\n", command, arg, control.Escape(hint), usage)
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
