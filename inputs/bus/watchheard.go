package bus

import (
	"context"
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
)

// A watcher the bus refuses is said so as soon as the bus says it
// (refusals.go), not once nats.go's request timeout has run out: the
// refusal of its consumer's create ($JS.API.CONSUMER.CREATE.KV_<bucket>…,
// heard while the create is in flight), of the subscription to its
// delivery subject (heard, or taken as kept, once the subscription is
// made, and for as long as it lasts) and of its answers to the consumer's
// flow control cancel the watcher's own context with a *RefusedError as
// the cause. That context is the one the watcher lives by (nats.go
// unsubscribes when it ends): a hearing that ends does not end it, only a
// refusal or the watcher's stop does. Its other requests are heard so
// that their refusals are theirs, never kept for a later timeout on the
// stream to be taken for: the look for a lost consumer (lost.go) ends at
// once, and the consumer's delete as it stops is heard a while.

// hearDelivery hears the bus refuse sub, the watcher's subscription to
// its delivery subject, from now on and before: such a refusal comes as
// the subscription is made, before the caller knows its subject (nats.go
// picks it). One whose callback ran already was kept, and is taken; one
// whose callback has not run yet is the connection's last error already
// (the connection read it before the consumer create's reply, which the
// server sent after it), so a watcher refused it says no (empty)
// snapshot first. unfc, the flow control's hearing, is forgotten with it
// when the watcher stops.
func (f *feed) hearDelivery(heard *hearing, sub *nats.Subscription, unfc func()) {
	unsub := heard.awaitSubscription(sub.Subject, func(subject string) { f.refusedAs(subject, true) })
	f.unhear = func() { unsub(); unfc() }
	if subject, ok := RefusedSubscription(f.w.js.Conn().LastError()); ok && subject == sub.Subject {
		f.refusedAs(subject, true) // the hearing's own word on it, later, changes nothing
	}
}

// hearFlowControl hears, from before the consumer is made for as long as
// the watcher lives, the bus refuse the watcher's answers to its
// consumer's flow control ($JS.FC.<stream>.…, a right easy to miss): the
// server then stops delivering, and the watcher waited out its init
// timeout again and again, never saying why. The right is the stream's,
// not a filter's: every watcher of the stream is refused it alike, and
// each refusal ends one of them.
func (f *feed) hearFlowControl(heard *hearing, stream string) (forget func()) {
	fc := "$JS.FC." + stream + "."
	return heard.await(func(subject string) bool { return strings.HasPrefix(subject, fc) },
		func(subject string) { f.refusedAs(subject, false) })
}

// refusedAs ends the watcher with the bus's refusal of subject (a publish,
// or a subscription) as the cause.
func (f *feed) refusedAs(subject string, subscription bool) {
	f.cancel(&RefusedError{Bucket: f.w.bucket, Stream: "KV_" + f.w.bucket, Subject: subject, Op: "read",
		Subscription: subscription})
}

// createsConsumer says whether subject, a publish the bus refused, is
// this watcher's consumer create: $JS.API.CONSUMER.CREATE.<stream>.<name>.
// <filter subject> (or, to a server before 2.9, …CREATE.<stream>). The
// filter is matched too: the rights of a node's user name the filters it
// may watch, so a watch of the same bucket under another filter, in
// flight at once, may be refused where this one is not.
func (f *feed) createsConsumer(subject string) bool {
	create := ".CONSUMER.CREATE." + f.stream
	return strings.HasSuffix(subject, create) ||
		strings.Contains(subject, create+".") && strings.HasSuffix(subject, "."+f.pre+f.w.filter)
}

// getsNewest says whether subject, a publish the bus refused, is this
// watcher's ask for the newest value under its filter (lost.go): a direct
// get of the last message by subject ($JS.API.DIRECT.GET.<stream>.
// <filter subject>) or, on a stream without direct gets,
// $JS.API.STREAM.MSG.GET.<stream>.
func (f *feed) getsNewest(subject string) bool {
	return strings.HasSuffix(subject, ".STREAM.MSG.GET."+f.stream) ||
		strings.Contains(subject, ".DIRECT.GET."+f.stream+".") && strings.HasSuffix(subject, "."+f.pre+f.w.filter)
}

// refusal is the bus's refusal that ended the watcher (nil if none did).
func (f *feed) refusal() error {
	var r *RefusedError
	if errors.As(context.Cause(f.ctx), &r) {
		return r
	}
	return nil
}
