package lawn

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "lawn.dev/proto/lawn/v1"
)

// Timer is a pending timer as lawnd stores it.
type Timer struct {
	Namespace string
	// ID is the caller's id: any 1..256 bytes (a Go string holds bytes as they are).
	ID string
	// TTL the timer was armed with (for an absolute deadline: deadline minus the time it was started).
	TTL      time.Duration
	Deadline time.Time
	Payload  []byte
	// Interval of a recurring timer; 0 for a one-shot timer.
	Interval time.Duration
}

// TimerSpec is what Start and StartMany send: exactly one of TTL (> 0) and Deadline (non-zero).
type TimerSpec struct {
	// Namespace: 1..64 of [a-z0-9._-]; empty means "default".
	Namespace string
	ID        string
	TTL       time.Duration
	Deadline  time.Time
	Payload   []byte
	// Interval > 0 makes the timer recurring: re-armed at previous deadline + Interval (drift-free).
	Interval time.Duration
	// Replace an existing timer of the same id instead of failing with ErrAlreadyExists.
	Replace bool
}

func (s *TimerSpec) request() (*pb.StartTimerRequest, error) {
	r := &pb.StartTimerRequest{Namespace: s.Namespace, Id: []byte(s.ID), Payload: s.Payload, Replace: s.Replace}
	if err := setWhen(s.TTL, s.Deadline, func(d *durationpb.Duration) { r.When = &pb.StartTimerRequest_Ttl{Ttl: d} },
		func(t *timestamppb.Timestamp) { r.When = &pb.StartTimerRequest_Deadline{Deadline: t} }); err != nil {
		return nil, err
	}
	if s.Interval < 0 {
		return nil, invalid("interval %v is negative; leave it 0 for a one-shot timer", s.Interval)
	}
	if s.Interval > 0 {
		r.Interval = durationpb.New(s.Interval)
	}
	return r, nil
}

// setWhen fills a request's `when` oneof from exactly one of ttl and deadline.
func setWhen(ttl time.Duration, deadline time.Time, setTTL func(*durationpb.Duration),
	setDeadline func(*timestamppb.Timestamp)) error {
	switch {
	case ttl != 0 && !deadline.IsZero():
		return invalid("set exactly one of TTL and Deadline, not both")
	case ttl != 0:
		setTTL(durationpb.New(ttl)) // lawnd refuses a negative TTL, naming the rule.
	case !deadline.IsZero():
		setDeadline(timestamppb.New(deadline))
	default:
		return invalid("set exactly one of TTL and Deadline")
	}
	return nil
}

func timerFrom(t *pb.Timer) *Timer {
	if t == nil {
		return nil
	}
	out := &Timer{Namespace: t.GetNamespace(), ID: string(t.GetId()), Payload: t.GetPayload()}
	if t.Ttl != nil {
		out.TTL = t.Ttl.AsDuration()
	}
	if t.Deadline != nil {
		out.Deadline = t.Deadline.AsTime()
	}
	if t.Interval != nil {
		out.Interval = t.Interval.AsDuration()
	}
	return out
}

// Expiration is one delivery of a fired timer to a Subscription.
type Expiration struct {
	Timer   Timer
	FiredAt time.Time
	// DeliveryID names this delivery for the ack; a redelivery of the same expiration carries the same id.
	DeliveryID uint64
	// Attempt is 1 for the first delivery, +1 for each redelivery.
	Attempt uint32
	// Late is set when the timer fired more than 1 s (or one tick, if longer) after its deadline.
	Late bool
	ack  *ackQueue // nil in observe mode
}

// Ack tells lawnd this expiration is handled, so it is not delivered again. Acks are batched (see
// Subscription); an ack after the stream that delivered the expiration broke, or after Close, is ignored,
// and lawnd delivers the expiration again. Acking twice is harmless (lawnd ignores the repeat); in observe
// mode Ack does nothing.
func (e *Expiration) Ack() {
	if e.ack != nil {
		e.ack.add(e.DeliveryID)
	}
}

func expirationFrom(x *pb.Expiration, ack *ackQueue) *Expiration {
	e := &Expiration{DeliveryID: x.GetDeliveryId(), Attempt: x.GetAttempt(), Late: x.GetLate(), ack: ack}
	if t := timerFrom(x.GetTimer()); t != nil {
		e.Timer = *t
	}
	if x.FiredAt != nil {
		e.FiredAt = x.FiredAt.AsTime()
	}
	return e
}

// StartResult is one item's outcome in StartMany: Err is nil when it started (then Timer is set if the
// call asked for timers), or the item's own error (ErrAlreadyExists, ErrInvalidArgument, ...), or the
// error of the call that carried it.
type StartResult struct {
	Timer *Timer
	Err   error
}

// Stats is GetStats' answer, limited to the namespaces the caller may read.
type Stats struct {
	PendingTimers uint64
	Outbox        uint64
	Redeliveries  uint64
	Namespaces    map[string]NamespaceStats
	// Shards is filled for callers with the admin permission (or without auth) only.
	Shards []ShardStats
}

// NamespaceStats is one namespace's line in Stats.
type NamespaceStats struct {
	PendingTimers uint64
	Outbox        uint64
	Subscribers   uint32
}

// ShardStats is one shard's line in Stats.
type ShardStats struct {
	Shard         uint32
	PendingTimers uint64
	LawnTimers    uint64
	WheelTimers   uint64
	LawnBuckets   uint64
}
