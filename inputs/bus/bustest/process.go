package bustest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ProcessCluster is a JetStream cluster of nats-servers each in its own
// process (the nats-server command of the module's nats-server version,
// built for the test), so that one can crash: killed (SIGKILL),
// it says nothing to the others, who take it for online until their
// orphan check (minutes), as a crashed member in production. A cluster
// in the test process (Cluster) can only be shut down, which the others
// hear at once.
type ProcessCluster struct {
	Names   []string   // s0, s1, …
	Ports   []int      // each server's client port
	URLs    string     // every server's client URL, comma-separated
	monitor []int      // each server's monitoring port
	args    [][]string // each server's command line
	cmds    []*exec.Cmd
	logs    []*Buffer
}

// natsServer builds the nats-server command of the module's version
// into a temporary directory of t's (a few seconds, once its packages are
// in the build cache); it skips t without a go command.
func natsServer(t testing.TB) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build nats-server with")
	}
	bin := filepath.Join(t.TempDir(), "nats-server")
	if out, err := exec.Command(gobin, "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	return bin
}

// StartProcessCluster starts n nats-server processes named s0, s1, … as
// the cluster "mesh", JetStream storing in temporary directories, and
// waits until every one accepts clients. They are killed when the test ends; their logs are said
// if it failed.
func StartProcessCluster(t testing.TB, n int) *ProcessCluster {
	t.Helper()
	bin := natsServer(t)
	client, route, monitor := make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i], monitor[i] = FreePort(t), FreePort(t), FreePort(t)
	}
	c := &ProcessCluster{Ports: client, monitor: monitor}
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
	}
	c.URLs = strings.Join(urls, ",")
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[j]))
			}
		}
		name := fmt.Sprintf("s%d", i)
		c.Names = append(c.Names, name)
		c.args = append(c.args, []string{bin, "-n", name, "-a", "127.0.0.1", "-p", fmt.Sprint(client[i]), "-m", fmt.Sprint(monitor[i]),
			"-js", "-sd", t.TempDir(), "--cluster_name", "mesh",
			"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", route[i]), "--routes", strings.Join(routes, ",")})
		c.cmds, c.logs = append(c.cmds, nil), append(c.logs, &Buffer{})
		c.start(t, i)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range c.logs {
				t.Logf("nats-server %s's log:\n%s", c.Names[i], l.String())
			}
		}
	})
	for i := range n {
		c.await(t, i)
	}
	return c
}

// start starts server i's process, killed when the test ends.
func (c *ProcessCluster) start(t testing.TB, i int) {
	t.Helper()
	cmd := exec.Command(c.args[i][0], c.args[i][1:]...)
	cmd.Stdout, cmd.Stderr = c.logs[i], c.logs[i]
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nats-server %s: %v", c.Names[i], err)
	}
	c.cmds[i] = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// await waits until server i accepts clients (up to 30 s).
func (c *ProcessCluster) await(t testing.TB, i int) {
	t.Helper()
	Eventually(t, 30*time.Second, func() error {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.Ports[i]), time.Second)
		if err != nil {
			return fmt.Errorf("nats-server %s does not accept clients yet: %w", c.Names[i], err)
		}
		return conn.Close()
	})
}

// StartAgain starts server i again, on its ports and store, once killed,
// and waits until it accepts clients.
func (c *ProcessCluster) StartAgain(t testing.TB, i int) {
	t.Helper()
	c.start(t, i)
	c.await(t, i)
}

// Kill crashes server i: SIGKILL, and waits until its process is gone.
func (c *ProcessCluster) Kill(t testing.TB, i int) {
	t.Helper()
	if err := c.cmds[i].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing nats-server %s: %v", c.Names[i], err)
	}
	_ = c.cmds[i].Wait()
}

// URL is server i's client URL.
func (c *ProcessCluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.Ports[i]) }

// MetaLeader is the name of the JetStream meta leader, as server i sees
// it (its monitoring's /jsz), once there is one (waited for up to 30 s).
func (c *ProcessCluster) MetaLeader(t testing.TB, i int) string {
	t.Helper()
	var leader string
	Eventually(t, 30*time.Second, func() error {
		r, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", c.monitor[i]))
		if err != nil {
			return err
		}
		defer r.Body.Close()
		var jsz struct {
			Meta struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		if err := json.NewDecoder(r.Body).Decode(&jsz); err != nil {
			return err
		}
		if leader = jsz.Meta.Leader; leader == "" {
			return fmt.Errorf("no JetStream meta leader yet")
		}
		return nil
	})
	return leader
}

// Leader is the index of the server leading stream, once it has a
// leader (waited for up to 30 s).
func (c *ProcessCluster) Leader(t testing.TB, js jetstream.JetStream, stream string) int {
	t.Helper()
	i := -1
	Eventually(t, 30*time.Second, func() error {
		st, err := js.Stream(context.Background(), stream)
		if err != nil {
			return err
		}
		ci := st.CachedInfo().Cluster
		if ci == nil || ci.Leader == "" {
			return fmt.Errorf("stream %s has no leader yet", stream)
		}
		if i = c.Index(ci.Leader); i < 0 {
			return fmt.Errorf("stream %s is led by %s, no server of the cluster", stream, ci.Leader)
		}
		return nil
	})
	return i
}

// Log is what server i has logged so far.
func (c *ProcessCluster) Log(i int) string { return c.logs[i].String() }

// Index is the index of the server named name (-1: none).
func (c *ProcessCluster) Index(name string) int {
	for i, n := range c.Names {
		if n == name {
			return i
		}
	}
	return -1
}
