package stage

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// fillFailure is what the stage says of a failed fill: in the report, the
// log, the status and explain. The node-engine's error text is untrusted:
// it may quote a line of a file it was sent, or a program's last words,
// which may print what the program read (a key it refused, from a file
// this request did not carry: a request of changed files alone carries
// only those). It is withheld for a request carrying a secret-bearing
// file (secret), and for any request when it holds the value of a secret
// the client holds (quotes, when not nil; nodes.NodeGraph.QuotesSecret);
// only the status and the request's paths it names are said then (paths
// are the plan's, never a secret). Otherwise it is said, cut to
// report.MaxText.
func fillFailure(err error, req *fill.Request, secret bool, quotes func(string) bool) string {
	var se *fill.StatusError
	if !errors.As(err, &se) {
		return report.Bound(err.Error())
	}
	why := "the request carried a secret"
	if !secret {
		if quotes == nil || !quotes(se.Msg) {
			return report.Bound(err.Error())
		}
		why = "it quotes a secret this client holds"
	}
	var named []string
	for _, f := range req.Files {
		if strings.Contains(se.Msg, f.Path) {
			named = append(named, f.Path)
		}
	}
	msg := "fill socket " + se.Socket + ": " + strconv.Itoa(se.Status) + " " + http.StatusText(se.Status) +
		": the node-engine's error text is withheld, as " + why + " (see the node-engine's log)"
	if len(named) > 0 {
		msg += "; it names " + strings.Join(named, ", ")
	}
	return report.Bound(msg)
}

// sayable is err as a log line may say it: a node-engine's text that
// quotes a secret the client holds (Config.QuotesSecret) is withheld, as
// fillFailure withholds it (a DELETE's error: the module's own secrets are
// let go once it leaves, but a text may quote any other of the node's).
func (s *Stage) sayable(err error) error {
	se, ok := errors.AsType[*fill.StatusError](err)
	if !ok || s.cfg.QuotesSecret == nil || !s.cfg.QuotesSecret(se.Msg) {
		return err
	}
	return errors.New(fillFailure(err, &fill.Request{}, false, s.cfg.QuotesSecret))
}

// carriesSecret says whether any file of the request holds a secret or a
// consumers list.
func carriesSecret(sent map[string]*nodes.FileValue) bool {
	for _, v := range sent {
		if v.Secret {
			return true
		}
	}
	return false
}
