package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// Config is what Run needs.
type Config struct {
	Dir  string // where the lab keeps everything (default ./.lab)
	Port int    // the NATS port on 127.0.0.1; 0: any free port
	Once bool   // settle, print the summary and return instead of running on
	Keep bool   // keep what an earlier lab left in Dir instead of wiping it
	// Settle bounds the wait for every module to settle (default 60s).
	Settle time.Duration
	Out    io.Writer // what a person reads (default os.Stdout)
	Log    zerolog.Logger
	// OnBus, when set, is called once the lab's NATS server is up and before
	// anything is loaded or started, with its URL and the .creds file of
	// the user lab (a test listens to every subject from there).
	OnBus func(natsURL, creds string)
	// OnSettled, when set, is called once the mesh has settled, with the
	// NATS URL and the .creds file of the lab user (allowed everything),
	// while every part still runs. Run goes on when it returns.
	OnSettled func(natsURL, creds string)
}

// ErrNotSettled is returned with Once when a module is not as the example
// mesh should end up (every module applied, grafana on g14 waiting unless
// a kept bus holds the value it waits for).
var ErrNotSettled = errors.New("the example mesh did not settle")

// Run runs the lab until ctx ends (or, with Once, until the mesh settles)
// and then stops every part: the clients, the fill servers, the vault, the
// provisioner server and nats-server, in that order. ctx ending while the
// lab starts (a Ctrl-C in its first seconds) is a stop like any other, not
// the error of whatever step it cut short.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Dir == "" {
		cfg.Dir = ".lab"
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 60 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	err := run(ctx, cfg)
	if err == nil || ctx.Err() == nil || errors.Is(err, ErrNotSettled) {
		return err
	}
	fmt.Fprintln(cfg.Out, "\nstopping")
	if cfg.Once {
		return fmt.Errorf("%w: stopped before it did", ErrNotSettled)
	}
	return nil
}

func run(ctx context.Context, cfg Config) error {
	out := zerolog.SyncWriter(cfg.Out) // the parts of the lab write to one Out
	log := cfg.Log
	started := time.Now()

	meshFS, err := fs.Sub(examples.Files, "mesh")
	if err != nil {
		return fmt.Errorf("the embedded example mesh: %w", err)
	}
	m, err := examples.LoadMesh(meshFS)
	if err != nil {
		return err
	}
	nodeNames, err := nodesOf(m)
	if err != nil {
		return err
	}
	l, err := newLayout(cfg.Dir, nodeNames)
	if err != nil {
		return err
	}
	defer l.cleanup()
	// One lab per directory: a second one (make run in another terminal,
	// --port 0 or not) must not wipe the running lab's creds, keys and
	// sockets before finding its port taken.
	release, err := l.lock()
	if err != nil {
		return err
	}
	defer release()
	if err := l.prepare(cfg.Keep); err != nil {
		return err
	}
	if err := l.seedStandIns(m); err != nil {
		return err
	}

	// The bus, in operator mode: a JWT user per part with its rights.
	fleet, err := spec.Fleet(nodeNames, providersOf(m))
	if err != nil {
		return err
	}
	s, err := startNATS(l.keys(), l.creds(), l.store(), cfg.Port, fleet)
	if err != nil {
		return err
	}
	defer shutdownNATS(s.Server)
	lab, err := connect(s, "lab")
	if err != nil {
		return err
	}
	defer lab.close()
	if cfg.OnBus != nil {
		cfg.OnBus(s.ClientURL(), s.creds("lab"))
	}
	setupCtx, cancelSetup := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSetup()
	if err := makeBuckets(setupCtx, lab, m); err != nil {
		return err
	}

	// The provisioner server makes its four buckets and writes the registry.
	prov := start("mesh-provisioner", func(ctx context.Context) error {
		return srv.Run(ctx, srv.Config{NATSURL: s.ClientURL(), Creds: s.creds("mesh-provisioner"), Log: log.With().Str("part", "mesh-provisioner").Logger()})
	})
	defer prov.stop(log)

	left := map[string]bool{}
	if err := load(setupCtx, s, m, func(name string) { left[name] = true }); err != nil {
		return err
	}
	var notes []string
	if len(left) > 0 {
		notes = append(notes, fmt.Sprintf("running as root, mesh-fill really chowns: the owners and groups this machine lacks (%s) are left out of the plans, so those files stay root's",
			strings.Join(slices.Sorted(maps.Keys(left)), ", ")))
	}

	// The dev vault answers as mesh-vault.
	vc, err := connect(s, "mesh-vault")
	if err != nil {
		return err
	}
	defer vc.close()
	v := devvault.New(log.With().Str("part", "devvault").Logger())
	for _, name := range slices.Sorted(maps.Keys(m.Secrets)) {
		v.Set(setupCtx, name, []byte(m.Secrets[name]))
	}
	if err := v.Start(vc.nc, vc.js); err != nil {
		return err
	}
	defer v.Stop()

	// Watch the reports before any client starts.
	applied, err := bus.WaitBucket(setupCtx, lab.js, spec.AppliedBucket, 100*time.Millisecond)
	if err != nil {
		return err
	}
	if cfg.Keep {
		if err := forgetReports(setupCtx, applied, slices.Sorted(maps.Keys(m.Assignments))); err != nil {
			return err
		}
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	w, err := applied.WatchAll(watchCtx)
	if err != nil {
		return fmt.Errorf("watching %s: %w", spec.AppliedBucket, err)
	}
	defer func() { _ = w.Stop() }()

	tailCtx, stopTail := context.WithCancel(context.Background())
	var tailDone sync.WaitGroup
	from := logEnd(l.programs())
	tailDone.Go(func() { tailPrograms(tailCtx, l.programs(), from, out) })
	defer func() { stopTail(); tailDone.Wait() }()

	for _, n := range nodeNames {
		f, err := startFill(l, n, log)
		if err != nil {
			return err
		}
		defer f.stop(log)
	}
	for _, n := range nodeNames {
		c, err := startClient(s, l, n, log)
		if err != nil {
			return err
		}
		defer c.stop(log)
	}

	intro(out, s, l, notes)
	r := newReports(slices.Sorted(maps.Keys(m.Assignments)), started)
	if r.valueSet, err = waitingValueSet(setupCtx, lab.js); err != nil {
		return err
	}
	settleErr := r.settle(ctx, w.Updates(), cfg.Settle)
	if ctx.Err() != nil {
		fmt.Fprintln(out, "\nstopping")
		if cfg.Once {
			return fmt.Errorf("%w: stopped before it did", ErrNotSettled)
		}
		return nil
	}
	if settleErr == nil && cfg.OnSettled != nil {
		cfg.OnSettled(s.ClientURL(), s.creds("lab"))
	}
	fmt.Fprintln(out)
	r.summary(out, show(l.rootDir()))
	for _, key := range slices.Sorted(maps.Keys(r.byKey)) {
		rep := r.byKey[key]
		if rep.State == "applied" {
			continue
		}
		fmt.Fprintln(out)
		e, err := explainModule(ctx, l.control(rep.Node), rep.Module)
		if err != nil {
			fmt.Fprintf(out, "(no explanation of %s on %s: %v)\n", rep.Module, rep.Node, err)
			continue
		}
		if err := control.WriteExplanation(out, e); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if err := printSweep(ctx, out, lab.nc); err != nil {
		fmt.Fprintf(out, "(no sweep of the mesh: %v)\n", err)
	}
	if settleErr != nil {
		fmt.Fprintf(out, "\n%v\n", settleErr)
	}
	if cfg.Once {
		if settleErr != nil {
			return fmt.Errorf("%w: %w", ErrNotSettled, settleErr)
		}
		return nil
	}

	tour(out, s, l)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "\nstopping")
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("the watch of %s ended", spec.AppliedBucket)
			}
			if e == nil {
				continue
			}
			var prev *report.Report
			if p, ok := r.byKey[e.Key()]; ok {
				prev = &p
			}
			rep, err := r.apply(e)
			if err != nil {
				log.Warn().Err(err).Msg("report")
				continue
			}
			if rep != nil {
				fmt.Fprintf(out, "  report: %s\n", describe(rep, prev))
			}
		}
	}
}

// intro says where everything is.
func intro(out io.Writer, s *natsBus, l *layout, notes []string) {
	fmt.Fprintf(out, "mesh-lab: the example mesh on this machine, nodes %s\n", strings.Join(l.nodes, " and "))
	fmt.Fprintf(out, "  NATS      %s  (operator mode: a JWT user per part with the rights of `mesh-provisioner rights`)\n", s.ClientURL())
	fmt.Fprintf(out, "  creds     %s/  (each part's .creds; lab.creds may do everything)\n", show(s.credsDir))
	fmt.Fprintf(out, "  files     %s/<node>/  (each node's mesh-fill writes there as if it were /)\n", show(l.rootDir()))
	fmt.Fprintf(out, "  programs  %s  (the restarts and reloads mesh-fill ran; also shown here)\n", show(l.programs()))
	for _, n := range l.nodes {
		fmt.Fprintf(out, "  %-8s  control %s  state %s\n", n, show(l.control(n)), show(l.state(n)))
	}
	for _, n := range notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	fmt.Fprintln(out, "filling…")
}

// tour says what to try next.
func tour(out io.Writer, s *natsBus, l *layout) {
	url := s.ClientURL() + " --creds " + show(s.creds("lab"))
	first := l.nodes[0]
	fmt.Fprintf(out, `
The lab runs until Ctrl-C. Try, in another terminal
(the nats CLI: go install github.com/nats-io/natscli/nats@%[10]s):
  cat %[1]s/etc/claude-code/config.toml
  nats -s %[2]s kv put mesh-config_resolved %[3]s.claude-code.model opus-4
      (the file is filled again; here: "restart claude-code.service on %[3]s")
  nats -s %[11]s req prov.ask.%[3]s '{"module":"claude-code","kind":"config","key":"model"}'
      (what a module's code in %[3]s's tool runner asks its client, SPEC §5.4: only that
      user may ask, and is answered on its own inbox; as lab the ask goes unanswered)
  go run ./cmd/mesh-provisioner-client graph explain --control %[4]s %[5]s
  go run ./cmd/mesh-provisioner sweep --nats %[9]s --stood-after 1s
      (the whole mesh: what holds it back and who answers it; as the
      operator's user, who may ask that and nothing else; it
      exits 1 (go run says "exit status 1"): %[5]s's need has waited over 1s, so it stood asked)
  nats -s %[2]s kv put mesh-config_resolved %[6]s.%[5]s.%[7]s smtp.mesh.internal
  go run ./cmd/mesh-provisioner-client graph dot --control %[8]s | dot -Tsvg > graph.svg
  nats -s %[2]s kv watch mesh-provisioner_applied
`, show(l.root(first)), url, first, show(l.control(WaitingNode)), WaitingModule, WaitingNode, WaitingConfig, show(l.control(first)),
		s.ClientURL()+" --creds "+show(s.creds("mesh-operator")), natsCLI, toolRunnerFlags(s, first))
}

// toolRunnerFlags are the nats CLI's flags that ask as node's tool runner:
// its creds and the inbox its rights let it hear (spec.RightsOf), as
// prov.ask is answered there alone.
func toolRunnerFlags(s *natsBus, node string) string {
	r, err := spec.RightsOf(spec.RoleToolRunner, node, nil)
	if err != nil {
		return s.ClientURL() + " (no tool runner: " + err.Error() + ")"
	}
	return s.ClientURL() + " --creds " + show(s.creds(r.User)) + " --inbox-prefix " + r.Inbox
}

// natsCLI is the version of the nats CLI the tour (and the README) install.
const natsCLI = "v0.5.0"
