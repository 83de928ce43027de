package bus

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A client given a user and password of another node (--node n9, --user
// provisioner-n1) connects fine, and every request it makes goes
// unanswered: the bus says so when asked.
func TestHearsInboxSaysWhenTheUserMayNotHearTheNodesReplies(t *testing.T) {
	s := bustest.Start(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "provisioner-n1", Password: "pw", Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{">"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.provisioner.n1.>"}},
			}},
			{Username: "admin", Password: "admin"},
		}
	})
	for _, c := range []struct {
		user, node string
		refused    bool
	}{
		{"provisioner-n1", "n1", false},
		{"provisioner-n1", "n9", true},
		{"admin", "n9", false},
	} {
		pw := "pw"
		if c.user == "admin" {
			pw = "admin"
		}
		name := "provisioner." + c.node
		nc := connect(t, Options{URL: s.ClientURL(), Name: name, User: c.user, Password: pw})
		err := HearsInbox(nc, c.user, InboxPrefix(name), 5*time.Second)
		var ir *InboxRefusedError
		if errors.As(err, &ir) != c.refused {
			t.Fatalf("%s as node %s: HearsInbox says %v", c.user, c.node, err)
		}
		if c.refused {
			want := "the bus does not let user provisioner-n1 hear replies on _INBOX.provisioner.n9.> (the user of another node or role?)"
			if err.Error() != want {
				t.Fatalf("the error says %q, not %q", err, want)
			}
		}
	}
}
