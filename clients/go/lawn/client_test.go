package lawn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"lawn.dev/lawn"
)

func TestStartGetRescheduleDelete(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()

	before := time.Now()
	started, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go-api", ID: "t1", TTL: time.Hour, Payload: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	if started.Namespace != "go-api" || started.ID != "t1" || string(started.Payload) != "p" || started.TTL != time.Hour {
		t.Fatalf("started %+v", started)
	}
	if started.Deadline.Before(before.Add(time.Hour)) || started.Deadline.After(time.Now().Add(time.Hour)) {
		t.Fatalf("deadline %v is not start time + 1h", started.Deadline)
	}

	got, err := c.Get(ctx, "go-api", "t1")
	if err != nil || !got.Deadline.Equal(started.Deadline) || string(got.Payload) != "p" {
		t.Fatalf("Get = %+v, %v", got, err)
	}

	_, err = c.Start(ctx, lawn.TimerSpec{Namespace: "go-api", ID: "t1", TTL: time.Minute})
	if !errors.Is(err, lawn.ErrAlreadyExists) || status.Code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate start: %v", err)
	}
	replaced, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go-api", ID: "t1", TTL: time.Minute, Replace: true})
	if err != nil || replaced.TTL != time.Minute || len(replaced.Payload) != 0 {
		t.Fatalf("replace: %+v, %v", replaced, err)
	}

	at := time.Now().Add(2 * time.Hour).Truncate(time.Microsecond)
	moved, err := c.RescheduleAt(ctx, "go-api", "t1", at)
	if err != nil || !moved.Deadline.Equal(at) {
		t.Fatalf("Reschedule to %v = %+v, %v", at, moved, err)
	}
	moved, err = c.RescheduleIn(ctx, "go-api", "t1", 3*time.Hour)
	if err != nil || moved.Deadline.Before(at.Add(time.Hour-time.Minute)) {
		t.Fatalf("Reschedule by TTL = %+v, %v", moved, err)
	}

	deleted, err := c.Delete(ctx, "go-api", "t1")
	if err != nil || deleted.ID != "t1" || !deleted.Deadline.Equal(moved.Deadline) {
		t.Fatalf("Delete = %+v, %v", deleted, err)
	}
	for name, call := range map[string]func() error{
		"get":        func() error { _, err := c.Get(ctx, "go-api", "t1"); return err },
		"delete":     func() error { _, err := c.Delete(ctx, "go-api", "t1"); return err },
		"reschedule": func() error { _, err := c.RescheduleIn(ctx, "go-api", "t1", time.Second); return err },
	} {
		if err := call(); !errors.Is(err, lawn.ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
}

func TestARecurringTimerFiresOnItsGridUntilDeleted(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	sub, err := c.Subscribe(ctx, "go-every", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go-every", ID: "tick", TTL: 100 * time.Millisecond,
		Interval: 200 * time.Millisecond})
	if err != nil || got.Interval != 200*time.Millisecond {
		t.Fatalf("recurring start = %+v, %v", got, err)
	}
	fired := take(t, sub, 3)
	for i, exp := range fired {
		exp.Ack()
		want := got.Deadline.Add(time.Duration(i) * 200 * time.Millisecond)
		if !exp.Timer.Deadline.Equal(want) || exp.FiredAt.Before(want) {
			t.Fatalf("firing %d: deadline %v fired %v, want deadline %v", i, exp.Timer.Deadline, exp.FiredAt, want)
		}
	}
	if _, err := c.Delete(ctx, "go-every", "tick"); err != nil {
		t.Fatal(err)
	}
}

func TestBadRequestsGetInvalidArgumentWithLawndsMessage(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	_, err := c.Start(ctx, lawn.TimerSpec{Namespace: "Bad Namespace", ID: "x", TTL: time.Second})
	var e *lawn.Error
	if !errors.As(err, &e) || e.Code != codes.InvalidArgument || !strings.Contains(e.Message, "namespace") {
		t.Fatalf("bad namespace: %v", err)
	}
	if _, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go", ID: "", TTL: time.Second}); !errors.Is(err, lawn.ErrInvalidArgument) {
		t.Fatalf("empty id: %v", err)
	}
	// Refused by the client before sending: neither or both of TTL and Deadline.
	if _, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go", ID: "x"}); !errors.Is(err, lawn.ErrInvalidArgument) {
		t.Fatalf("no TTL: %v", err)
	}
	_, err = c.Start(ctx, lawn.TimerSpec{Namespace: "go", ID: "x", TTL: time.Second, Deadline: time.Now()})
	if !errors.Is(err, lawn.ErrInvalidArgument) {
		t.Fatalf("both TTL and Deadline: %v", err)
	}
	if _, err := lawn.Dial(d.address(), lawn.WithToken("has space")); !errors.Is(err, lawn.ErrInvalidArgument) {
		t.Fatalf("token with a space: %v", err)
	}
	if _, err := c.Get(ctx, "go", "x"); !errors.Is(err, lawn.ErrNotFound) {
		t.Fatalf("nothing was created by the refused starts: %v", err)
	}
}

func TestStartManyReportsEachItemAndSplitsBatches(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	for _, returnTimers := range []bool{false, true} {
		ns := fmt.Sprintf("go-batch-%v", returnTimers)
		t.Run(ns, func(t *testing.T) {
			if _, err := c.Start(ctx, lawn.TimerSpec{Namespace: ns, ID: "taken", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			specs := []lawn.TimerSpec{
				{Namespace: ns, ID: "a", TTL: time.Hour, Payload: []byte("pa")},
				{Namespace: ns, ID: "taken", TTL: time.Hour}, // lawnd: ALREADY_EXISTS
				{Namespace: "BAD", ID: "b", TTL: time.Hour},  // lawnd: INVALID_ARGUMENT
				{Namespace: ns, ID: "no-when"},               // the client: INVALID_ARGUMENT, not sent
				{Namespace: ns, ID: "c", Deadline: time.Now().Add(time.Hour)},
			}
			// Batches of 2: the bad items fall in different calls, and the last call holds one item.
			results, err := c.StartMany(ctx, specs, &lawn.StartManyOptions{ReturnTimers: returnTimers, BatchSize: 2})
			if err != nil || len(results) != len(specs) {
				t.Fatalf("%d results, %v", len(results), err)
			}
			want := []error{nil, lawn.ErrAlreadyExists, lawn.ErrInvalidArgument, lawn.ErrInvalidArgument, nil}
			for i, r := range results {
				if (want[i] == nil) != (r.Err == nil) || (want[i] != nil && !errors.Is(r.Err, want[i])) {
					t.Errorf("item %d: %v, want %v", i, r.Err, want[i])
				}
				if r.Err == nil && returnTimers != (r.Timer != nil) {
					t.Errorf("item %d: timer %+v with return_timers %v", i, r.Timer, returnTimers)
				}
			}
			if returnTimers && (string(results[0].Timer.Payload) != "pa" || results[4].Timer.ID != "c") {
				t.Errorf("returned timers %+v %+v", results[0].Timer, results[4].Timer)
			}
			if n := namespaceStats(t, c, ns).PendingTimers; n != 3 {
				t.Errorf("%d pending in %s, want 3 (taken, a, c)", n, ns)
			}
		})
	}
}

func TestStartManyOfMoreThanOneCall(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	// More items than one call takes, and more bytes (5 MiB of payloads) than lawnd's 4 MiB message limit.
	specs := make([]lawn.TimerSpec, lawn.MaxBatch+5)
	payload := make([]byte, 500)
	for i := range specs {
		specs[i] = lawn.TimerSpec{Namespace: "go-many", ID: fmt.Sprintf("t%05d", i), TTL: time.Hour, Payload: payload}
	}
	results, err := c.StartMany(ctx, specs, nil)
	if err != nil || len(results) != len(specs) {
		t.Fatalf("%d results, %v", len(results), err)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if n := namespaceStats(t, c, "go-many").PendingTimers; n != uint64(len(specs)) {
		t.Fatalf("%d pending, want %d", n, len(specs))
	}
}

func TestListIteratesOverEveryPageInIdOrder(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	var specs []lawn.TimerSpec
	for i := 24; i >= 0; i-- {
		specs = append(specs, lawn.TimerSpec{Namespace: "go-list", ID: fmt.Sprintf("id-%02d", i), TTL: time.Hour})
	}
	specs = append(specs, lawn.TimerSpec{Namespace: "go-other", ID: "elsewhere", TTL: time.Hour})
	if _, err := c.StartMany(ctx, specs, nil); err != nil {
		t.Fatal(err)
	}
	it := c.List(ctx, "go-list", 7)
	var ids []string
	for it.Next() {
		ids = append(ids, it.Timer().ID)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 25 {
		t.Fatalf("listed %d: %v", len(ids), ids)
	}
	for i, id := range ids {
		if id != fmt.Sprintf("id-%02d", i) {
			t.Fatalf("position %d: %s (%v)", i, id, ids)
		}
	}
	bad := c.List(ctx, "go-list", 1001)
	if bad.Next() || !errors.Is(bad.Err(), lawn.ErrInvalidArgument) {
		t.Fatalf("page size 1001: %v", bad.Err())
	}
	empty := c.List(ctx, "go-none", 0)
	if empty.Next() || empty.Err() != nil {
		t.Fatalf("empty namespace: %v", empty.Err())
	}
}

func TestStatsCountsNamespaces(t *testing.T) {
	d := startLawnd(t)
	c := dial(t, d)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.Start(ctx, lawn.TimerSpec{Namespace: "go-stats", ID: id, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.PendingTimers != 3 || s.Namespaces["go-stats"].PendingTimers != 3 || len(s.Shards) != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAStoppedLawndIsUnavailable(t *testing.T) {
	d := startLawnd(t)
	addr := d.address()
	d.stop()
	c, err := lawn.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Get(context.Background(), "go", "x"); !errors.Is(err, lawn.ErrUnavailable) {
		t.Fatalf("Get against a stopped lawnd: %v", err)
	}
}

func TestTheDefaultTimeoutEndsACallThatGetsNoAnswer(t *testing.T) {
	// A listener that accepts and never speaks: the call waits for the connection until the timeout.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c, err := lawn.Dial(l.Addr().String(), lawn.WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Get(context.Background(), "go", "x")
	if !errors.Is(err, lawn.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with no answer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx, "go", "x"); !errors.Is(err, context.Canceled) || !errors.Is(err, lawn.ErrCanceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // Twice is fine.
		t.Fatal(err)
	}
	if _, err := c.Subscribe(context.Background(), "go", nil); !errors.Is(err, lawn.ErrCanceled) {
		t.Fatalf("Subscribe on a closed client: %v", err)
	}
}
