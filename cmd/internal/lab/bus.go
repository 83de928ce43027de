package lab

import (
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/examples"
)

// serverConf is the nats-server configuration the lab runs, from examples.
const serverConf = "nats/server.conf"

// password is the dev password examples/nats/server.conf gives user.
// DEV ONLY: these passwords are published in the repository.
func password(user string) string { return "dev-only-" + user }

// startNATS runs nats-server in this process with examples/nats/server.conf
// (a copy written to dir, as ProcessConfigFile reads a file), moved to
// 127.0.0.1:port (0: any free port), its JetStream store in store, no
// monitoring port, no signal handling and no logs of its own.
func startNATS(dir, store string, port int) (*server.Server, error) {
	conf, err := fs.ReadFile(examples.Files, serverConf)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded %s: %w", serverConf, err)
	}
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		return nil, fmt.Errorf("writing the nats-server configuration %s: %w", path, err)
	}
	o, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("nats-server configuration %s: %w", path, err)
	}
	o.Host, o.Port = "127.0.0.1", port
	if port == 0 {
		o.Port = server.RANDOM_PORT
	} else {
		// nats-server only logs a port it cannot listen on; say it here.
		ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("the lab's NATS port %d is taken (another lab or nats-server?); pass --port 0 for any free port: %w", port, err)
		}
		ln.Close()
	}
	o.HTTPHost, o.HTTPPort = "", 0
	o.StoreDir = store
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
	return s, nil
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

// userURL is the server's client URL with user and its dev password in it.
func userURL(s *server.Server, user string) string {
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		return s.ClientURL()
	}
	u.User = url.UserPassword(user, password(user))
	return u.String()
}

// inboxOf is the reply-subject prefix examples/nats/server.conf lets user
// subscribe to: _INBOX.provisioner.<node>, _INBOX.<service>; "" for lab,
// which may use the default.
func inboxOf(user string) string {
	if node, ok := strings.CutPrefix(user, "provisioner-"); ok {
		return "_INBOX.provisioner." + node
	}
	if user == "lab" {
		return ""
	}
	return "_INBOX." + user
}

// conn is one connection of one user of the configuration.
type conn struct {
	user string
	nc   *nats.Conn
	js   jetstream.JetStream
}

// connect logs in to s as user with its dev password and inbox prefix.
func connect(s *server.Server, user string) (*conn, error) {
	opts := []nats.Option{nats.Name("mesh-lab " + user), nats.UserInfo(user, password(user))}
	if p := inboxOf(user); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
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
