package lab

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// natsBus is the lab's nats-server, in operator mode: one account and a
// JWT user per part with the rights of nodes/spec RightsOf, each user's
// .creds file in credsDir.
type natsBus struct {
	*server.Server
	credsDir string
	users    map[string]spec.Rights
}

// creds is the .creds file of user.
func (b *natsBus) creds(user string) string { return filepath.Join(b.credsDir, user+".creds") }

// startNATS runs nats-server in this process in operator mode: an operator
// and account whose keys are kept in keysDir (made there the first time), a
// user per part of fleet whose .creds file it writes to credsDir (0600, as
// a real node keeps it), listening on
// 127.0.0.1:port (0: any free port), its JetStream store in store, no
// monitoring port, no signal handling and no logs of its own.
func startNATS(keysDir, credsDir, store string, port int, fleet []spec.Rights) (*natsBus, error) {
	op, err := auth.LoadOperator("mesh-lab", keysDir)
	if err != nil {
		return nil, err
	}
	b := &natsBus{credsDir: credsDir, users: map[string]spec.Rights{}}
	for _, r := range fleet {
		b.users[r.User] = r
	}
	if _, err := op.WriteCreds(credsDir, fleet); err != nil {
		return nil, fmt.Errorf("the lab's creds: %w", err)
	}
	o := &server.Options{ServerName: "mesh-lab", Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: store}
	if err := op.Configure(o); err != nil {
		return nil, err
	}
	if port == 0 {
		o.Port = server.RANDOM_PORT
	} else {
		// nats-server only logs a port it cannot listen on; say it here.
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("the lab's NATS port %d is taken (another lab or nats-server?); pass --port 0 for any free port (make run ARGS='--port 0'): %w", port, err)
		}
		ln.Close()
	}
	o.NoLog, o.NoSigs = true, true
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("starting nats-server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("nats-server on %s:%d not ready within 10s", o.Host, port)
	}
	b.Server = s
	return b, nil
}

// shutdownNATS stops s once the clients have left it (a client drains its
// connection after its Run returns; at most 3 s are given to that), so no
// part sees its bus vanish under it. Connections of others (a person's
// `nats` CLI) are not waited for.
func shutdownNATS(s *server.Server) {
	for deadline := time.Now().Add(3 * time.Second); clientsConnected(s) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	s.Shutdown()
	s.WaitForShutdown()
}

// clientsConnected says whether a provisioner client is still connected.
func clientsConnected(s *server.Server) bool {
	cz, err := s.Connz(&server.ConnzOptions{})
	if err != nil {
		return false
	}
	for _, c := range cz.Conns {
		if strings.HasPrefix(c.Name, "provisioner.") {
			return true
		}
	}
	return false
}

// conn is one connection of one user of the lab's bus.
type conn struct {
	user string
	nc   *nats.Conn
	js   jetstream.JetStream
}

// connect logs in to b as user with its .creds file and the inbox prefix
// its rights allow.
func connect(b *natsBus, user string) (*conn, error) {
	r, ok := b.users[user]
	if !ok {
		return nil, fmt.Errorf("the lab's bus has no user %s", user)
	}
	opts := []nats.Option{nats.Name("mesh-lab " + user), nats.UserCredentials(b.creds(user))}
	if p := r.Inbox; p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(b.ClientURL(), opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to the lab's NATS as %s: %w", user, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream as %s: %w", user, err)
	}
	return &conn{user: user, nc: nc, js: js}, nil
}

func (c *conn) close() {
	if c != nil && c.nc != nil {
		c.nc.Close()
	}
}
