package bus

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
)

// The first try's reason reaches the log whichever comes first: nats.go
// handing it to the ReconnectErrHandler, or the line saying the bus is not
// reachable yet (CI once saw the line go without it: nats.go had cleared
// LastError already).
func TestTheFirstTrysReasonIsSaidInEitherOrder(t *testing.T) {
	refused := errors.New("nats: Authorization Violation")

	var handlerFirst firstTry
	if handlerFirst.failed(refused) {
		t.Error("the handler said the reason before the line was said")
	}
	if got := handlerFirst.said(nil); got != refused {
		t.Errorf("the line's reason is %v, want the handler's %v", got, refused)
	}

	var lineFirst firstTry
	if got := lineFirst.said(nil); got != nil {
		t.Errorf("the line's reason is %v with none known", got)
	}
	if !lineFirst.failed(refused) {
		t.Error("the handler did not say the reason the line went without")
	}
	if lineFirst.failed(errors.New("later")) {
		t.Error("a later reconnect's error said as the first try's")
	}

	var down firstTry
	down.said(nil)
	if down.failed(nats.ErrNoServers) {
		t.Error("no server at all said again: the line says the bus is not reachable")
	}
	var up firstTry
	up.said(nil)
	up.connected()
	if up.failed(refused) {
		t.Error("an error after the connection was made said as the first try's")
	}
}
