package lawn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"lawn.dev/lawn"
)

// fast reconnects quickly, so that the tests do not wait out the default backoff.
var fast = lawn.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond}

func startDue(t *testing.T, c *lawn.Client, ns string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := c.Start(context.Background(), lawn.TimerSpec{Namespace: ns, ID: id, TTL: 50 * time.Millisecond,
			Payload: []byte("payload-" + id)}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSubscribeDeliversEveryExpirationOnceWhenAcked(t *testing.T) {
	d := startLawnd(t, config(t, "ack_timeout: 2s")...)
	c := dial(t, d)
	const ns, n = "go-sub", 200
	sub, err := c.Subscribe(context.Background(), ns, &lawn.SubscribeOptions{MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	started := time.Now()
	specs := make([]lawn.TimerSpec, n)
	for i := range specs {
		specs[i] = lawn.TimerSpec{Namespace: ns, ID: fmt.Sprintf("t%03d", i), TTL: 100 * time.Millisecond}
	}
	if _, err := c.StartMany(context.Background(), specs, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < n {
		exp := take(t, sub, 1)[0] // Acked before the next: the window of 16 keeps moving.
		if seen[exp.Timer.ID] || exp.Attempt != 1 || exp.Timer.Namespace != ns {
			t.Fatalf("%+v (seen before: %v)", exp, seen[exp.Timer.ID])
		}
		if exp.FiredAt.Before(exp.Timer.Deadline) || exp.Timer.Deadline.Before(started.Add(100*time.Millisecond)) {
			t.Fatalf("fired early: %+v", exp)
		}
		seen[exp.Timer.ID] = true
		exp.Ack()
	}
	waitFor(t, "the acks to empty the outbox", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
	// Past the 2 s ack timeout nothing comes again: the acks counted.
	select {
	case exp := <-sub.Expirations():
		t.Fatalf("delivered again after its ack: %+v", exp)
	case <-time.After(3 * time.Second):
	}
}

func TestAnUnackedExpirationIsDeliveredAgainAfterTheAckTimeout(t *testing.T) {
	d := startLawnd(t, config(t, "ack_timeout: 300ms")...)
	c := dial(t, d)
	const ns = "go-sub-timeout"
	sub, err := c.Subscribe(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	startDue(t, c, ns, "again")
	first := take(t, sub, 1)[0]
	again := take(t, sub, 1)[0]
	if again.DeliveryID != first.DeliveryID || again.Attempt != 2 || again.Timer.ID != "again" {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	again.Ack()
	waitFor(t, "the ack", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
}

func TestADroppedConnectionReconnectsAndGetsTheUnackedExpirationAgain(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	const ns = "go-sub-drop"
	proxy := newDroppingProxy(t, d.address())
	viaProxy, err := lawn.Dial(proxy.address())
	if err != nil {
		t.Fatal(err)
	}
	defer viaProxy.Close()
	sub, err := viaProxy.Subscribe(context.Background(), ns, &lawn.SubscribeOptions{Backoff: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	startDue(t, c, ns, "held")
	first := take(t, sub, 1)[0]
	if proxy.drop() < 1 {
		t.Fatal("no connection to drop")
	}
	again := take(t, sub, 1)[0]
	if again.Timer.ID != "held" || again.DeliveryID != first.DeliveryID || again.Attempt != 2 {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	if sub.Reconnects() < 1 {
		t.Fatalf("%d reconnects", sub.Reconnects())
	}
	first.Ack() // For the dead stream: ignored, harmless.
	again.Ack()
	waitFor(t, "the ack on the new stream", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
}

func TestClosingASubscriptionLeavesItsUnackedExpirationToAnother(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	const ns = "go-sub-close"
	a, err := c.Subscribe(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	startDue(t, c, ns, "work")
	held := take(t, a, 1)[0]
	if err := a.Close(); err != nil || a.Err() != nil {
		t.Fatalf("Close: %v, Err: %v", err, a.Err())
	}
	if _, open := <-a.Expirations(); open {
		t.Fatal("the channel is open after Close")
	}
	held.Ack() // After Close: ignored.
	b, err := c.Subscribe(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	again := take(t, b, 1)[0]
	if again.DeliveryID != held.DeliveryID || again.Attempt != 2 {
		t.Fatalf("held %+v, again %+v", held, again)
	}
	again.Ack()
	waitFor(t, "the ack", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
}

func TestHandleAcksWhatItsFunctionHandled(t *testing.T) {
	d := startLawnd(t, config(t, "ack_timeout: 300ms")...)
	c := dial(t, d)
	const ns = "go-sub-handle"
	sub, err := c.Subscribe(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	startDue(t, c, ns, "ok", "fails-once")
	attempts := map[string][]uint32{}
	done := make(chan error, 1)
	go func() {
		done <- sub.Handle(func(exp *lawn.Expiration) error {
			attempts[exp.Timer.ID] = append(attempts[exp.Timer.ID], exp.Attempt)
			if exp.Timer.ID == "fails-once" && exp.Attempt == 1 {
				return errors.New("not this time")
			}
			if len(attempts["ok"]) == 1 && len(attempts["fails-once"]) == 2 {
				return lawn.ErrStopHandling // Acked too.
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		sub.Close()
		t.Fatal("Handle did not finish")
	}
	if fmt.Sprint(attempts["ok"]) != "[1]" || fmt.Sprint(attempts["fails-once"]) != "[1 2]" {
		t.Fatalf("attempts %v", attempts)
	}
	sub.Close() // Sends the last ack.
	waitFor(t, "the acks", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
}

func TestAnObserverGetsACopyWithoutAcksWhileAWorkerTakesTheWork(t *testing.T) {
	d := startLawnd(t, config(t, "ack_timeout: 300ms")...)
	c := dial(t, d)
	const ns = "go-sub-observe"
	observer, err := c.Subscribe(context.Background(), ns, &lawn.SubscribeOptions{Observe: true})
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	worker, err := c.Subscribe(context.Background(), ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	waitFor(t, "both streams", func() bool { return namespaceStats(t, c, ns).Subscribers == 2 })
	startDue(t, c, ns, "x")
	copy := take(t, observer, 1)[0]
	work := take(t, worker, 1)[0]
	if copy.Timer.ID != "x" || work.Timer.ID != "x" {
		t.Fatalf("observer %+v, worker %+v", copy, work)
	}
	copy.Ack() // Nothing to ack for an observer: a no-op.
	work.Ack()
	waitFor(t, "the worker's ack", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
	// Past the ack timeout: the observer is not sent it again.
	select {
	case exp := <-observer.Expirations():
		t.Fatalf("observer got %+v again", exp)
	case <-time.After(time.Second):
	}
}

func TestABadNamespaceEndsTheSubscriptionWithInvalidArgument(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	sub, err := c.Subscribe(context.Background(), "Not Valid", &lawn.SubscribeOptions{Backoff: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	select {
	case exp, open := <-sub.Expirations():
		if open {
			t.Fatalf("got %+v", exp)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the subscription did not end")
	}
	if !errors.Is(sub.Err(), lawn.ErrInvalidArgument) || sub.Reconnects() != 0 {
		t.Fatalf("Err %v after %d reconnects", sub.Err(), sub.Reconnects())
	}
}

func TestCancellingTheContextOrClosingTheClientEndsTheSubscription(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := c.Subscribe(ctx, "go-sub-ctx", nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitEnded(t, sub, "cancel")
	if !errors.Is(sub.Err(), context.Canceled) {
		t.Fatalf("Err after cancel: %v", sub.Err())
	}

	other, err := lawn.Dial(d.address())
	if err != nil {
		t.Fatal(err)
	}
	sub, err = other.Subscribe(context.Background(), "go-sub-ctx", &lawn.SubscribeOptions{Backoff: fast})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stream", func() bool { return namespaceStats(t, c, "go-sub-ctx").Subscribers == 1 })
	other.Close()
	waitEnded(t, sub, "Client.Close")
	if !errors.Is(sub.Err(), lawn.ErrCanceled) {
		t.Fatalf("Err after the client closed: %v", sub.Err())
	}
}

func TestCancellingTheContextSendsTheAcksMadeBeforeIt(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	const ns = "go-sub-cancel-acks"
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := c.Subscribe(ctx, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	startDue(t, c, ns, "a", "b")
	for _, exp := range take(t, sub, 2) {
		exp.Ack()
	}
	cancel() // At once: the acks may still be waiting to go out, and must not be lost.
	waitEnded(t, sub, "cancel")
	if !errors.Is(sub.Err(), context.Canceled) {
		t.Fatalf("Err: %v", sub.Err())
	}
	waitFor(t, "the acks made before the cancel", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
	sub.Close() // After the end, and twice: harmless.
	sub.Close()
}

func TestWithNoReconnectALawndStopEndsTheSubscription(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	sub, err := c.Subscribe(context.Background(), "go-sub-once", &lawn.SubscribeOptions{NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	waitFor(t, "the stream", func() bool { return namespaceStats(t, c, "go-sub-once").Subscribers == 1 })
	d.stop()
	waitEnded(t, sub, "a stop with NoReconnect")
	if sub.Reconnects() != 0 {
		t.Fatalf("%d reconnects with NoReconnect", sub.Reconnects())
	}
	if err := sub.Err(); err != nil && !errors.Is(err, lawn.ErrUnavailable) {
		t.Fatalf("Err: %v (lawnd drained: nil or ErrUnavailable)", err)
	}
}

func TestASubscriptionSurvivesALawndRestartAndGetsWhatWasUnacked(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	const ns = "go-restart"
	sub, err := c.Subscribe(context.Background(), ns, &lawn.SubscribeOptions{Backoff: fast})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	startDue(t, c, ns, "before")
	held := take(t, sub, 1)[0]
	if _, err := c.Start(context.Background(), lawn.TimerSpec{Namespace: ns, ID: "after", TTL: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	d.stop()
	d.start()
	got := map[string]*lawn.Expiration{}
	for len(got) < 2 {
		exp := take(t, sub, 1)[0]
		got[exp.Timer.ID] = exp
		exp.Ack()
	}
	if got["before"] == nil || got["after"] == nil || got["before"].DeliveryID != held.DeliveryID {
		t.Fatalf("held %+v; after the restart %+v", held, got)
	}
	if sub.Reconnects() < 1 {
		t.Fatalf("%d reconnects", sub.Reconnects())
	}
	waitServing(t, c)
	waitFor(t, "the acks after the restart", func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
}
