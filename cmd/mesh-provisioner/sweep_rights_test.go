package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// exampleBus is a bus whose users have exactly the rights the project
// generates (nodes/spec RightsOf): the password users of
// examples/nats/server.conf, or JWT users of an operator made from them.
// login gives the sweep command's flags that log in as a user, and
// config the server's.
type exampleBus struct {
	s      *natsd.Server
	login  func(user string) []string
	config func(user string) server.Config
}

func startExampleBus(t *testing.T, jwtUsers bool) exampleBus {
	t.Helper()
	if !jwtUsers {
		s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
		urlOf := func(user string) string {
			u, _ := url.Parse(s.ClientURL())
			u.User = url.UserPassword(user, auth.DevPassword(user))
			return u.String()
		}
		return exampleBus{s: s,
			login:  func(user string) []string { return []string{"--nats", urlOf(user)} },
			config: func(user string) server.Config { return server.Config{NATSURL: urlOf(user)} }}
	}
	users, err := spec.Fleet([]string{"ace", "g14"}, []string{"gitea"})
	if err != nil {
		t.Fatal(err)
	}
	s, creds := authtest.Bus(t, users)
	return exampleBus{s: s,
		login: func(user string) []string { return []string{"--nats", s.ClientURL(), "--creds", creds[user]} },
		config: func(user string) server.Config {
			return server.Config{NATSURL: s.ClientURL(), Creds: creds[user]}
		}}
}

// TestSweepWithTheServersRights: with the rights the project generates,
// the server's account may ask the verb (mesh-provisioner sweep runs with
// the server's creds, SPEC §6.2) and the server runs without a refusal
// (its buckets, the registry, the advisory of a deleted bucket); a
// client's account may not (§2.3 r2), and the sweep says so at once with
// the bus's reason, exit 2, rather than at its timeout.
func TestSweepWithTheServersRights(t *testing.T) {
	for _, mode := range []string{"config users", "JWT users"} {
		t.Run(mode, func(t *testing.T) {
			bus := startExampleBus(t, mode == "JWT users")
			var logs bustest.Buffer
			cfg := bus.config("mesh-provisioner")
			cfg.Log = zerolog.New(&logs)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- server.Run(ctx, cfg) }()
			t.Cleanup(func() { cancel(); <-done })

			// The operator's user (SPEC §2.3: anyone may ask the verb) and
			// the server's both sweep with nothing but their login: the
			// reply prefix comes from the creds' JWT or the URL's user.
			for _, user := range []string{"mesh-provisioner", "mesh-operator"} {
				var code int
				var out, errs string
				bustest.Eventually(t, 10*time.Second, func() error {
					code, out, errs = runSweep(bus.login(user)...)
					if code != 0 {
						return fmt.Errorf("sweep as %s: exit %d\n%s%s", user, code, out, errs)
					}
					return nil
				})
				if !strings.Contains(out, "modules 0") {
					t.Errorf("sweep as %s:\n%s", user, out)
				}
			}
			// The operator reads nothing but the verb's answers.
			op := bustest.Connect(t, bus.s, operatorLogin(t, bus)...)
			opJS, err := jetstream.New(op)
			if err != nil {
				t.Fatal(err)
			}
			kvCtx, kvCancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = opJS.KeyValue(kvCtx, spec.NeedsBucket)
			kvCancel()
			if err == nil {
				t.Errorf("the operator's user could open %s; it may only ask the verb", spec.NeedsBucket)
			}

			for _, user := range []string{"provisioner-ace", "toolrunner-ace", "gitea"} {
				start := time.Now()
				code, out, errs := runSweep(bus.login(user)...)
				took := time.Since(start)
				t.Logf("sweep as %s: exit %d after %v: %s", user, code, took.Round(time.Millisecond), errs)
				if code != 2 || !strings.Contains(errs, "Permissions Violation") || out != "" {
					t.Errorf("sweep as %s: exit %d, stdout %q, stderr %q; want 2 and the bus's refusal", user, code, out, errs)
				}
				if took > 5*time.Second {
					t.Errorf("sweep as %s took %v to fail: it waited for its timeout", user, took)
				}
			}

			// The server hears that a bucket of its own was deleted and
			// makes it again, with these rights.
			lab := bustest.Connect(t, bus.s, labLogin(t, bus)...)
			js, err := jetstream.New(lab)
			if err != nil {
				t.Fatal(err)
			}
			if err := js.DeleteKeyValue(context.Background(), spec.NeedsBucket); err != nil {
				t.Fatal(err)
			}
			// Heard at once, made within a pass (a kick starts one no
			// sooner than a second after the last); on a loaded machine
			// (CI's race run) JetStream's creates take seconds more.
			bustest.Eventually(t, 30*time.Second, func() error {
				_, err := js.KeyValue(context.Background(), spec.NeedsBucket)
				return err
			})
			// A registry kind changed by hand is seen and put back
			// within seconds (the server watches its registry between
			// passes), with these rights.
			reg, err := js.KeyValue(context.Background(), spec.RegistryBucket)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Put(context.Background(), "config", []byte(`{"kind":"config","owner":"by-hand"}`)); err != nil {
				t.Fatal(err)
			}
			want := server.EntryJSON(server.Registry()[3])
			bustest.Eventually(t, 15*time.Second, func() error {
				e, err := reg.Get(context.Background(), "config")
				if err != nil || string(e.Value()) != string(want) {
					return fmt.Errorf("registry kind config not put back: %v %s\n%s", err, e.Value(), logs.String())
				}
				return nil
			})
			if strings.Contains(logs.String(), "ermission") {
				t.Errorf("the server was refused something:\n%s", logs.String())
			}
		})
	}
}

// operatorLogin is the nats options of the operator's user of bus.
func operatorLogin(t *testing.T, bus exampleBus) []nats.Option {
	t.Helper()
	opts := []nats.Option{nats.CustomInboxPrefix("_INBOX.mesh-operator")}
	if args := bus.login("mesh-operator"); len(args) == 4 {
		return append(opts, nats.UserCredentials(args[3]))
	}
	return append(opts, nats.UserInfo("mesh-operator", auth.DevPassword("mesh-operator")))
}

// labLogin is the nats options of the unrestricted lab user of bus.
func labLogin(t *testing.T, bus exampleBus) []nats.Option {
	t.Helper()
	args := bus.login("lab")
	if len(args) == 4 {
		return []nats.Option{nats.UserCredentials(args[3])}
	}
	return []nats.Option{nats.UserInfo("lab", auth.DevPassword("lab"))}
}

// A sweep run with no login on a bus that wants one (an operator's first
// try, the README's command without its --creds) says the bus's reason and
// what to give: --creds, and whose.
func TestSweepWithNoLoginOnABusThatWantsOneSaysToGiveCreds(t *testing.T) {
	bus := startExampleBus(t, true)
	code, _, errs := runFor(t, 30*time.Second, "sweep", "--nats", bus.s.ClientURL())
	if code != 2 || !strings.Contains(errs, "Authorization Violation") ||
		!strings.Contains(errs, "no --creds given") || !strings.Contains(errs, "mesh-operator") {
		t.Errorf("exit %d, stderr %q; want 2, the bus's reason and that --creds (the mesh-operator user's) is missing", code, errs)
	}
}
