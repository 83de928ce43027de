package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// controlGet asks the daemon's control socket for path.
func controlGet(sock, path string) ([]byte, int, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	resp, err := c.Get("http://control" + path)
	if err != nil {
		return nil, 0, fmt.Errorf("the daemon is not running (control socket %s does not answer: %v)", sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

func status(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	b, code, err := controlGet(*sock, "/v1/modules")
	return printOr(b, code, err, stdout, stderr)
}

func explain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	_ = fs.Bool("json", false, "print JSON for machines")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mesh-provisioner-client graph explain [--json] [--control SOCK] <module>")
		return 2
	}
	b, code, err := controlGet(*sock, "/v1/explain?module="+url.QueryEscape(fs.Arg(0)))
	return printOr(b, code, err, stdout, stderr)
}

func dot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph dot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("control", defaultControl, "the daemon's control socket")
	mod := fs.String("module", "", "only this module and what it reads")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := "/v1/graph.dot"
	if *mod != "" {
		path += "?module=" + url.QueryEscape(*mod)
	}
	b, code, err := controlGet(*sock, path)
	return printOr(b, code, err, stdout, stderr)
}

func printOr(b []byte, code int, err error, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if code != http.StatusOK {
		fmt.Fprint(stderr, string(b))
		return 1
	}
	stdout.Write(b)
	return 0
}
