package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// sweepInbox is the reply prefix the sweep connects with when nothing
// says another: the server's (nodes/spec RightsOf), so the server's creds
// work with it.
const sweepInbox = "_INBOX.mesh-provisioner"

// inboxFor is the reply prefix the sweep connects with: --inbox when
// given; else the one the creds' user may hear (its JWT lists it, as the
// operator's `_INBOX.mesh-operator`); else `_INBOX.<user>` for a user named
// with a password in the URL or, when the URL names none (nats.go logs in
// as the URL's), by --user (the example configuration's services, the
// operator among them, hear replies there); else the server's.
func inboxFor(flagged, creds, user, natsURL string) string {
	if flagged != "" {
		return flagged
	}
	if creds != "" {
		if in := bus.InboxOfCreds(creds); in != "" {
			return in
		}
	}
	first, _, _ := strings.Cut(natsURL, ",")
	// A user with no password is a token (nats://TOKEN@host, as nats.go
	// reads it): never an inbox, which every request carries on the bus.
	if u, err := url.Parse(strings.TrimSpace(first)); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); !hasPassword {
			return sweepInbox
		}
		if name := u.User.Username(); name != "" && spec.EncodeToken(name) == name {
			return "_INBOX." + name
		}
		return sweepInbox
	}
	if user != "" && spec.EncodeToken(user) == user {
		return "_INBOX." + user
	}
	return sweepInbox
}

// sweepTimeout bounds the whole sweep: connecting, and every page.
const sweepTimeout = time.Minute

// sweep asks the server's verb for a sweep and prints it: exit 0 when
// nothing failed or stood asked, 1 when something did (a need, a
// module's report, or a module left without a report for longer than
// --stood-after), 2 when the sweep could not be made (SPEC §6.2). A
// --node or --module that names nothing the mesh knows is a sweep made
// (0), said on stderr.
func sweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mesh-provisioner sweep", flag.ContinueOnError)
	fs.SetOutput(cli.UsageOut(args, stdout, stderr))
	natsURL := fs.String("nats", "", "NATS URL of the bus (required)")
	creds := fs.String("creds", "", "NATS credentials file")
	user := fs.String("user", "", "NATS user (its password from --password-file or $"+cli.PasswordEnv+")")
	password := cli.PasswordFlags(fs)
	node := fs.String("node", "", "only this node's needs")
	module := fs.String("module", "", "only this module's needs")
	stoodAfter := fs.Duration("stood-after", 10*time.Minute, "a need waiting longer than this stood asked")
	asJSON := fs.Bool("json", false, "print the reply as JSON (all pages joined)")
	inboxFlag := fs.String("inbox", "", "reply prefix to connect with (default: the creds' user's, else _INBOX.<the URL's user, else --user>, else "+sweepInbox+")")
	if err := cli.RefusePasswordArg(args); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	if code, ok := cli.Parse(fs, args, stderr); !ok {
		return code
	}
	if err := cli.Positive(fs, "stood-after"); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	if *natsURL == "" {
		// SPEC §7: no optional flag, as for serve. A default bus would
		// have a cron job missing the flag sweep whatever answers there.
		fmt.Fprintln(stderr, "mesh-provisioner sweep: --nats is required")
		return 2
	}
	if err := checkCreds(*creds, ""); err != nil { // its inbox is the creds' own (inboxFor)
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	// A cron job's stderr goes to mail or a CI log: the URL is checked as
	// serve checks it, and named redacted (a user:password@ in it).
	if err := bus.CheckURLs(*natsURL); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	if err := checkInbox(*inboxFlag); err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	pw, err := login(*user, password)
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	shownURL := bus.RedactURL(*natsURL)
	inbox := inboxFor(*inboxFlag, *creds, *user, *natsURL)
	// A request the bus refuses (a permissions violation: these creds may
	// not publish the verb or subscribe to the reply inbox) is never
	// answered; the violation comes to the error handler, which ends the
	// sweep at once with the bus's reason.
	refusedCtx, refuse := context.WithCancelCause(context.Background())
	defer refuse(nil)
	opts := []nats.Option{nats.Name("mesh-provisioner sweep"), nats.Timeout(5 * time.Second),
		nats.CustomInboxPrefix(inbox), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				refuse(err)
			}
		})}
	if *creds != "" {
		opts = append(opts, nats.UserCredentials(*creds))
	}
	if *user != "" || pw != "" { // as inputs/bus Connect, for the client and serve
		opts = append(opts, nats.UserInfo(*user, pw))
	}
	nc, err := nats.Connect(*natsURL, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: connecting to %s: %v%s%s\n", shownURL, err, loginHint(err, *creds, *user, *natsURL,
			"a user who may ask "+spec.QuerySubject+", e.g. the operator's mesh-operator", spec.RoleOperator), noBusHint(err))
		return 2
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(refusedCtx, sweepTimeout)
	defer cancel()
	r, err := server.AskSweep(ctx, nc, *node, *module, stoodAfter.String())
	if err != nil {
		if cause := context.Cause(refusedCtx); cause != nil {
			fmt.Fprintf(stderr, "mesh-provisioner sweep: the bus refused the sweep: %v (the sweep needs the right to publish %s and to subscribe to %s.>, as the operator's and the server's creds have)\n",
				cause, spec.QuerySubject, inbox)
			return 2
		}
		if errors.Is(err, nats.ErrNoResponders) {
			fmt.Fprintf(stderr, "mesh-provisioner sweep: no server answers %s on %s (is mesh-provisioner serve running?): %v\n",
				spec.QuerySubject, shownURL, err)
			return 2
		}
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
		return 2
	}
	// What is printed is what the sweep is for: output that cannot be
	// written (a full disk under `--json > sweep.json`) is a sweep not
	// made, exit 2, not a clean mesh.
	out := &firstError{w: stdout}
	if r.Summary.Failed > 0 && len(r.FailedModules) == 0 {
		// a server older than the reply's failed_modules: asked of the reports
		r.FailedModules = failedModules(ctx, nc, r, *node, *module, stderr)
	}
	if *asJSON {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "mesh-provisioner sweep: %v\n", err)
			return 2
		}
		_, _ = out.Write(control.JSONSafe(b.Bytes()))
	} else {
		server.WriteSweep(out, r)
	}
	if out.err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: writing the sweep: %v\n", out.err)
		return 2
	}
	if r.NothingNamed != "" {
		// A name mistyped reads as a mesh with nothing held: said on
		// stderr, the reply printed as it is. The exit status stays SPEC
		// §6.2's (the sweep was made, and nothing in it failed): a cron
		// job that must catch a typo reads stderr or nothing_named.
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %s (is the name right?)\n", control.JSONSafe([]byte(r.NothingNamed)))
	} else if r.NoPlan != "" {
		// Assigned without a provisioning plan, as the server read the
		// assignments: not a mesh with nothing held. (Not guessed from
		// all counts being zero, which a module whose report is out of
		// shape once made them.)
		fmt.Fprintf(stderr, "mesh-provisioner sweep: %s\n", control.JSONSafe([]byte(r.NoPlan)))
	}
	if r.Held() {
		return 1
	}
	return 0
}

// failedModules names, for people, the modules whose report says failed
// (the reply only counts them): asked of the verb after the sweep, leaving
// out the reports the sweep found orphaned (it did not count them). When
// they cannot be asked, it says so on stderr and the summary alone counts
// them.
func failedModules(ctx context.Context, nc *nats.Conn, r server.SweepReply, node, module string, stderr io.Writer) []server.FailedModule {
	all, err := server.AskFailedModules(ctx, nc, node, module)
	if err != nil {
		fmt.Fprintf(stderr, "mesh-provisioner sweep: naming the failed modules: %v\n", err)
		return nil
	}
	orphan := map[string]bool{}
	for _, o := range r.Orphans {
		if o.Bucket == spec.AppliedBucket {
			orphan[o.Key] = true
		}
	}
	var counted []server.FailedModule
	for _, m := range all {
		if !orphan[m.Key] {
			counted = append(counted, m)
		}
	}
	return counted
}

// loginHint is what a refused connection made with no login at all lacks:
// on a bus that wants a user (every real fleet's, the lab's), the bus says
// only "Authorization Violation", so the operator is told to give --creds,
// and whose: who (a user that may do what the command does) and role
// (the `rights --role` that makes one). Empty when a login was given
// (--creds, --user or a user in the URL: then the bus's reason is about
// that login).
func loginHint(err error, creds, user, natsURL, who, role string) string {
	if creds != "" || user != "" || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		return ""
	}
	for _, u := range strings.Split(natsURL, ",") {
		if p, perr := url.Parse(strings.TrimSpace(u)); perr == nil && p.User != nil {
			return ""
		}
	}
	return " (no --creds given: give the creds of " + who + ", made with `mesh-provisioner rights --role " + role + " --format nsc`)"
}

// checkInbox refuses an --inbox that is no subject prefix (empty: none
// given): nats.go would take it and fail the request with "invalid
// subject", naming neither the flag nor the value.
func checkInbox(inbox string) error {
	if inbox == "" {
		return nil
	}
	for _, tok := range strings.Split(inbox, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("--inbox %q is not a subject prefix (tokens joined by dots, none empty, no space or wildcard), e.g. _INBOX.mesh-operator", inbox)
		}
	}
	return nil
}

// noBusHint is what nats.go's "no servers available for connection" does
// not say: that nothing answered at the URL (no bus there, or another
// port), and the flag that names the bus. Empty for any other error.
func noBusHint(err error) string {
	if errors.Is(err, nats.ErrNoServers) {
		return " (nothing answers there: is the bus up, and is --nats its URL?)"
	}
	// Something took the connection and hung up (EOF), said no INFO, or
	// said nothing (a read timeout: an HTTP port, such as the bus's
	// monitoring port, waits for a request): a port that is no bus's.
	var op *net.OpError
	if errors.Is(err, io.EOF) || errors.Is(err, nats.ErrNoInfoReceived) ||
		(errors.As(err, &op) && op.Op == "read" && op.Timeout()) {
		return " (something there took the connection but did not greet as a NATS server: give --nats the bus's client port (4222 unless set otherwise), not its monitoring port or another service's)"
	}
	return ""
}

// firstError is w keeping the first error a write returned (and writing
// nothing after it).
type firstError struct {
	w   io.Writer
	err error
}

func (f *firstError) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	f.err = err
	return n, err
}
