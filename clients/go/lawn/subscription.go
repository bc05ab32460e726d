package lawn

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	pb "lawn.dev/proto/lawn/v1"
)

// SubscribeOptions tunes a Subscription; nil means the defaults.
type SubscribeOptions struct {
	// MaxInFlight is how many unacked expirations lawnd lets this stream hold (0: lawnd's default, 100).
	MaxInFlight uint32
	// MaxBatch is how many expirations lawnd may put in one message (0: 1000, lawnd's cap); the channel still
	// carries them one at a time.
	MaxBatch uint32
	// Observe receives a best-effort copy of every expiration, without acks and without taking work from the
	// other subscribers.
	Observe bool
	// NoReconnect ends the subscription when its first stream ends, instead of opening a new one.
	NoReconnect bool
	// Backoff between reconnects (defaults: 100 ms doubling to 10 s, with jitter).
	Backoff Backoff
	// AckLinger is how long an ack may wait for others to go with it (default 20 ms). Acks go at once when
	// half of MaxInFlight wait, when the subscription waits for lawnd, or when it closes.
	AckLinger time.Duration
	// CloseGrace is how long Close waits for lawnd to end the stream after the half-close (default 2 s).
	CloseGrace time.Duration
}

// retryable are the codes after which a new stream may well succeed (lawnd restarting or draining, the
// connection lost, a subscriber cap that may free up); any other code ends the subscription.
var retryable = map[codes.Code]bool{codes.Unavailable: true, codes.Internal: true, codes.Unknown: true,
	codes.Aborted: true, codes.DeadlineExceeded: true, codes.Canceled: true, codes.ResourceExhausted: true}

// Subscription delivers a namespace's expirations on a channel, reconnecting when its stream breaks.
//
//	sub, err := client.Subscribe(ctx, "billing", nil)
//	for exp := range sub.Expirations() {
//		if handle(exp.Timer) == nil {
//			exp.Ack()
//		} // else: not acked, lawnd delivers it again after its ack_timeout.
//	}
//	err = sub.Err() // why the channel closed: nil after Close, ctx's error, or an error no retry fixes
//
// The stream is opened by Subscribe, so an observer sees what fires from then on. When a stream breaks,
// the expirations it delivered and that were not acked yet are delivered again by lawnd (to this or another
// subscriber; Attempt counts up), and acks of them made later are ignored. Errors a retry cannot fix
// (ErrInvalidArgument, ErrUnauthenticated, ErrPermissionDenied, ...) close the channel; Err says which.
type Subscription struct {
	client    *Client
	open      *pb.SubscribeRequest
	observe   bool
	reconnect bool
	backoff   *backoffState
	linger    time.Duration
	grace     time.Duration
	ackBatch  int

	// The streams' context: not the caller's, so that a cancelled caller context still lets the waiting
	// acks out (it closes the subscription as Close does); cancelled after the grace or when run ends.
	base       context.Context
	cancelBase context.CancelFunc
	out        chan *Expiration
	done       chan struct{} // Closed when closing starts: stop delivering, half-close.
	ended      chan struct{} // Closed when run returns.

	mu         sync.Mutex
	closed     bool
	err        error
	current    *ackQueue
	reconnects int
}

// Subscribe opens a subscription to namespace's expirations. ctx bounds its life: when ctx ends, the
// subscription closes as Close does (waiting acks are sent) and Err is ctx's error. Close it when done.
// The error is ErrCanceled if the client is closed; anything lawnd refuses (a bad namespace, a missing
// permission) ends the subscription instead, with Err saying why. It may wait while the connection is
// being made.
func (c *Client) Subscribe(ctx context.Context, namespace string, o *SubscribeOptions) (*Subscription, error) {
	if c.isClosed() {
		return nil, &Error{Code: codes.Canceled, Message: "the client was closed"}
	}
	if o == nil {
		o = &SubscribeOptions{}
	}
	batch, inFlight := o.MaxBatch, o.MaxInFlight
	if batch == 0 {
		batch = 1000
	}
	if inFlight == 0 {
		inFlight = 100 // lawnd's default for 0; sets when acks go out.
	}
	s := &Subscription{
		client:    c,
		open:      &pb.SubscribeRequest{Kind: &pb.SubscribeRequest_Open_{Open: &pb.SubscribeRequest_Open{Namespace: namespace, MaxInFlight: o.MaxInFlight, Observe: o.Observe, MaxBatch: batch}}},
		observe:   o.Observe,
		reconnect: !o.NoReconnect,
		backoff:   newBackoff(o.Backoff),
		linger:    o.AckLinger,
		grace:     o.CloseGrace,
		ackBatch:  int(inFlight / 2),
		out:       make(chan *Expiration),
		done:      make(chan struct{}),
		ended:     make(chan struct{}),
	}
	if s.linger <= 0 {
		s.linger = 20 * time.Millisecond
	}
	if s.grace <= 0 {
		s.grace = 2 * time.Second
	}
	if s.ackBatch < 1 {
		s.ackBatch = 1
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	first, err := s.openStream()
	go s.run(first, err)
	go func() {
		select {
		case <-ctx.Done():
			s.closeWith(ctx.Err())
		case <-s.ended:
		}
	}()
	return s, nil
}

// Expirations is the channel of expirations, one at a time, closed when the subscription ends.
func (s *Subscription) Expirations() <-chan *Expiration { return s.out }

// Err is why the subscription ended: nil after Close (or a stream that lawnd ended with NoReconnect),
// the context's error (context.Canceled or context.DeadlineExceeded), ErrCanceled after Client.Close, or
// the error that no retry could fix. Meaningful once the channel is closed.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Reconnects is the number of times a new stream was attempted after the first.
func (s *Subscription) Reconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconnects
}

// Close sends the acks that wait, half-closes, and lets lawnd end the stream (cancelling it after
// CloseGrace); expirations received and not yet taken from the channel are dropped unacked, for lawnd to
// deliver again, and an ack made after Close is ignored (from Handle's function, return ErrStopHandling
// instead). It returns when the channel is closed. Safe to call more than once, from any goroutine.
func (s *Subscription) Close() error {
	s.closeWith(nil)
	return nil
}

// closeWith starts closing (once; err becomes Err) and waits for run to end, cancelling the stream after
// the grace.
func (s *Subscription) closeWith(err error) {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.err = err
		close(s.done)
		if s.current != nil {
			s.current.end()
		}
	}
	s.mu.Unlock()
	grace := time.NewTimer(s.grace)
	defer grace.Stop()
	select {
	case <-s.ended:
	case <-grace.C:
		s.cancelBase()
		<-s.ended
	}
}

// ErrStopHandling, returned by Handle's function, acks that expiration and makes Handle return nil; the
// subscription stays open until Close, which sends the ack.
var ErrStopHandling = errors.New("lawn: stop handling")

// Handle calls fn for each expiration until the subscription ends or fn returns ErrStopHandling, acking
// those for which fn returns nil or ErrStopHandling (the others are delivered again after lawnd's
// ack_timeout). It returns Err, or nil after ErrStopHandling. Close the subscription afterwards, as always.
func (s *Subscription) Handle(fn func(*Expiration) error) error {
	for exp := range s.out {
		err := fn(exp)
		if err == nil || errors.Is(err, ErrStopHandling) {
			exp.Ack()
		}
		if errors.Is(err, ErrStopHandling) {
			return nil
		}
	}
	return s.Err()
}

func (s *Subscription) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// stream is one Subscribe call with its ack queue.
type stream struct {
	call   pb.TimerService_SubscribeClient
	ctx    context.Context
	cancel context.CancelFunc
	acks   *ackQueue
}

func (s *Subscription) openStream() (*stream, error) {
	ctx, cancel := context.WithCancel(s.base)
	call, err := s.client.stub.Subscribe(ctx)
	if err == nil {
		// io.EOF: lawnd already ended the stream; its Recv (in serve) tells why.
		if err = call.Send(s.open); err == io.EOF {
			err = nil
		}
	}
	if err != nil {
		cancel()
		return nil, fromRPC(err)
	}
	st := &stream{call: call, ctx: ctx, cancel: cancel}
	if !s.observe {
		st.acks = newAckQueue(s.ackBatch)
	}
	s.mu.Lock()
	s.current = st.acks
	closed := s.closed
	s.mu.Unlock()
	if closed && st.acks != nil {
		st.acks.end() // Close came while the stream opened: half-close it at once.
	}
	return st, nil
}

// run serves one stream after the other until the subscription is closed (by Close or the caller's
// context), the client is closed, or a stream ends in an error that a retry cannot fix.
func (s *Subscription) run(st *stream, err error) {
	defer close(s.ended)
	defer close(s.out)
	defer s.cancelBase()
	for {
		if err == nil {
			err = s.serve(st)
		}
		if s.isClosed() {
			return
		}
		if s.client.isClosed() {
			s.finish(&Error{Code: codes.Canceled, Message: "the client was closed"})
			return
		}
		if err != nil && (!s.reconnect || !retryable[fromRPC(err).(*Error).Code]) {
			s.finish(err)
			return
		}
		if err == nil && !s.reconnect {
			s.finish(nil)
			return
		}
		wait := time.NewTimer(s.backoff.delay())
		select {
		case <-wait.C:
		case <-s.done:
			wait.Stop()
			return
		case <-s.client.closed:
			wait.Stop()
			s.finish(&Error{Code: codes.Canceled, Message: "the client was closed"})
			return
		}
		s.mu.Lock()
		s.reconnects++
		s.mu.Unlock()
		st, err = s.openStream()
	}
}

// finish records why the subscription ends, unless closing already did.
func (s *Subscription) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if err != nil {
		err = fromRPC(err)
	}
	s.err = err
}

// serve reads one stream until it ends: nil when lawnd ends it with OK (asked to by the half-close, or
// draining), else the stream's error. Its acks go out from a goroutine of their own meanwhile.
func (s *Subscription) serve(st *stream) error {
	defer st.cancel()
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		if st.acks != nil {
			st.acks.send(st.call, s.linger)
		} else {
			select { // An observer has no acks to send; it only half-closes.
			case <-s.done:
				_ = st.call.CloseSend()
			case <-st.ctx.Done():
			}
		}
	}()
	defer func() {
		if st.acks != nil {
			st.acks.drop() // The stream is gone: later acks of its deliveries are ignored.
		}
		st.cancel()
		<-senderDone
	}()
	for {
		if st.acks != nil {
			st.acks.setReaderWaiting(true)
		}
		resp, err := st.call.Recv()
		if st.acks != nil {
			st.acks.setReaderWaiting(false)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		s.backoff.reset()
		batch := resp.GetExpirations()
		if x := resp.GetExpiration(); x != nil && len(batch) == 0 {
			batch = []*pb.Expiration{x}
		}
		for _, x := range batch {
			select {
			case <-s.done:
				continue // Closing: what is left goes unacked; keep reading until lawnd ends the stream.
			default:
			}
			select {
			case s.out <- expirationFrom(x, st.acks):
			case <-s.done:
			}
		}
	}
}

// ackQueue collects one stream's acks and sends them in batches from its own goroutine (gRPC allows one
// sender at a time per stream).
type ackQueue struct {
	mu      sync.Mutex
	ids     []uint64
	batch   int
	waiting bool // The reader waits for lawnd: nothing else is coming, so send now.
	ending  bool // Send what is left, then half-close.
	dropped bool // The stream is gone.
	kick    chan struct{}
}

func newAckQueue(batch int) *ackQueue {
	return &ackQueue{batch: batch, kick: make(chan struct{}, 1)}
}

func (q *ackQueue) signal() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *ackQueue) add(id uint64) {
	q.mu.Lock()
	if q.ending || q.dropped {
		q.mu.Unlock()
		return
	}
	q.ids = append(q.ids, id)
	q.mu.Unlock()
	q.signal()
}

func (q *ackQueue) setReaderWaiting(w bool) {
	q.mu.Lock()
	q.waiting = w
	q.mu.Unlock()
	if w {
		q.signal()
	}
}

func (q *ackQueue) end() {
	q.mu.Lock()
	q.ending = true
	q.mu.Unlock()
	q.signal()
}

func (q *ackQueue) drop() {
	q.mu.Lock()
	q.dropped = true
	q.ids = nil
	q.mu.Unlock()
	q.signal()
}

// urgent reports whether the acks should go now rather than wait for company.
func (q *ackQueue) urgent() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ending || q.dropped || (len(q.ids) > 0 && (q.waiting || len(q.ids) >= q.batch))
}

func (q *ackQueue) take() (ids []uint64, ending, dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids, q.ids = q.ids, nil
	return ids, q.ending, q.dropped
}

// send runs until the stream ends or is dropped: it waits for acks, lets them gather for up to linger
// unless urgent, and sends them in one message; on end it sends the rest and half-closes.
func (q *ackQueue) send(call pb.TimerService_SubscribeClient, linger time.Duration) {
	for {
		<-q.kick
		if !q.urgent() {
			timer := time.NewTimer(linger)
		gather:
			for {
				select {
				case <-q.kick:
					if q.urgent() {
						break gather
					}
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
		}
		ids, ending, dropped := q.take()
		if dropped {
			return
		}
		if len(ids) > 0 {
			ack := &pb.SubscribeRequest{Kind: &pb.SubscribeRequest_Ack_{Ack: &pb.SubscribeRequest_Ack{DeliveryIds: ids}}}
			if call.Send(ack) != nil {
				return // The stream broke; its reader sees why.
			}
		}
		if ending {
			_ = call.CloseSend()
			return
		}
	}
}
