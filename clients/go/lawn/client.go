package lawn

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "lawn.dev/proto/lawn/v1"
)

// MaxBatch is the most items lawnd takes in one StartTimers call; StartMany splits larger slices.
const MaxBatch = 10000

// Client is a connection to lawnd. It is safe for concurrent use; close it with Close.
type Client struct {
	conn      *grpc.ClientConn
	stub      pb.TimerServiceClient
	timeout   time.Duration
	closed    chan struct{} // Closed by Close: subscriptions stop reconnecting.
	closeOnce sync.Once
	closeErr  error
}

// Dial connects to lawnd at address (host:port). It does not wait for the connection: an unreachable lawnd
// or a failed TLS handshake shows up as ErrUnavailable on the first call.
func Dial(address string, opts ...Option) (*Client, error) {
	o := options{timeout: 10 * time.Second, maxMessage: 64 << 20}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	dialOptions, err := o.grpcDialOptions()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.Dial(address, dialOptions...)
	if err != nil {
		return nil, fromRPC(err)
	}
	return &Client{conn: conn, stub: pb.NewTimerServiceClient(conn), timeout: o.timeout, closed: make(chan struct{})}, nil
}

// Close closes the connection; subscriptions on it end with ErrCanceled (their channels close). Safe to
// call more than once, from any goroutine.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.conn.Close()
	})
	return c.closeErr
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Conn is the underlying gRPC connection, for the generated stubs (health checks, the admin service).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// call runs one unary call under the default timeout unless ctx has a deadline of its own.
func (c *Client) call(ctx context.Context, f func(context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	return fromRPC(f(ctx))
}

// Start starts one timer and returns it as lawnd stored it (its absolute deadline, its TTL).
// ErrAlreadyExists if the id is pending and spec.Replace is false.
func (c *Client) Start(ctx context.Context, spec TimerSpec) (*Timer, error) {
	req, err := spec.request()
	if err != nil {
		return nil, err
	}
	var resp *pb.StartTimerResponse
	err = c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.StartTimer(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return timerFrom(resp.GetTimer()), nil
}

// StartManyOptions tunes StartMany; nil means the defaults.
type StartManyOptions struct {
	// ReturnTimers asks lawnd for each started timer (StartResult.Timer); by default results carry errors only.
	ReturnTimers bool
	// BatchSize is the most items per StartTimers call, 1..MaxBatch (0: MaxBatch).
	BatchSize int
	// BatchBytes is the most bytes of items per call (0: 1 MiB), well below lawnd's max_message_bytes
	// (4 MiB by default); a single larger item goes alone.
	BatchBytes int
}

// StartMany starts many timers in StartTimers calls of up to BatchSize items and BatchBytes bytes. Each
// item succeeds or fails on its own: results[i] is specs[i]'s outcome. The error is the first call that
// failed as a whole: the items it carried, and those of later calls, which are not sent, carry it as their
// Err; items lawnd (or the client) refused do not make it non-nil.
func (c *Client) StartMany(ctx context.Context, specs []TimerSpec, o *StartManyOptions) ([]StartResult, error) {
	if o == nil {
		o = &StartManyOptions{}
	}
	count, bytes := o.BatchSize, o.BatchBytes
	if count == 0 {
		count = MaxBatch
	}
	if bytes == 0 {
		bytes = 1 << 20
	}
	if count < 0 || count > MaxBatch || bytes < 0 {
		return nil, invalid("BatchSize %d is outside 1..%d, or BatchBytes %d is negative", count, MaxBatch, bytes)
	}
	results := make([]StartResult, len(specs))
	// Items the client refuses itself get their error here and are not sent.
	var batch []int                   // results index of each item in the call being filled
	var items []*pb.StartTimerRequest // its requests, built once
	batchBytes := 0
	var failed error
	flush := func() {
		if len(batch) > 0 && failed == nil {
			failed = c.startBatch(ctx, items, batch, results, o.ReturnTimers)
		}
		if failed != nil {
			for _, i := range batch {
				results[i] = StartResult{Err: failed}
			}
		}
		batch, items, batchBytes = batch[:0], nil, 0
	}
	for i := range specs {
		item, err := specs[i].request()
		if err != nil {
			results[i] = StartResult{Err: err}
			continue
		}
		size := proto.Size(item) + 4 // + the field tag and length in the batch
		if len(batch) > 0 && (len(batch) == count || batchBytes+size > bytes) {
			flush()
		}
		batch = append(batch, i)
		items = append(items, item)
		batchBytes += size
	}
	flush()
	return results, failed
}

// startBatch sends one StartTimers call of `items` and fills results[at[k]] with item k's outcome.
func (c *Client) startBatch(ctx context.Context, items []*pb.StartTimerRequest, at []int, results []StartResult, returnTimers bool) error {
	req := &pb.StartTimersRequest{ReturnTimers: returnTimers, Timers: items}
	var resp *pb.StartTimersResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.StartTimers(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if len(resp.GetResults()) != len(at) {
		return &Error{Code: codes.Internal, Message: "lawnd answered a different number of results than items sent"}
	}
	for k, r := range resp.GetResults() {
		i := at[k]
		if r.GetCode() != 0 {
			results[i] = StartResult{Err: &Error{Code: codeOf(r.GetCode()), Message: r.GetMessage()}}
			continue
		}
		results[i] = StartResult{Timer: timerFrom(r.GetTimer())}
	}
	return nil
}

// Delete deletes a pending timer and returns it; ErrNotFound if there is none.
func (c *Client) Delete(ctx context.Context, namespace, id string) (*Timer, error) {
	var resp *pb.DeleteTimerResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.DeleteTimer(ctx, &pb.DeleteTimerRequest{Namespace: namespace, Id: []byte(id)})
		return err
	})
	if err != nil {
		return nil, err
	}
	return timerFrom(resp.GetTimer()), nil
}

// RescheduleIn moves a pending timer to now + ttl, keeping its payload and interval, and returns it;
// ErrNotFound if there is none.
func (c *Client) RescheduleIn(ctx context.Context, namespace, id string, ttl time.Duration) (*Timer, error) {
	if ttl == 0 {
		return nil, invalid("a TTL of 0: give the time from now the timer should fire")
	}
	return c.reschedule(ctx, &pb.RescheduleTimerRequest{Namespace: namespace, Id: []byte(id),
		When: &pb.RescheduleTimerRequest_Ttl{Ttl: durationpb.New(ttl)}})
}

// RescheduleAt moves a pending timer to deadline, keeping its payload and interval, and returns it;
// ErrNotFound if there is none.
func (c *Client) RescheduleAt(ctx context.Context, namespace, id string, deadline time.Time) (*Timer, error) {
	if deadline.IsZero() {
		return nil, invalid("a zero deadline: give the time the timer should fire")
	}
	return c.reschedule(ctx, &pb.RescheduleTimerRequest{Namespace: namespace, Id: []byte(id),
		When: &pb.RescheduleTimerRequest_Deadline{Deadline: timestamppb.New(deadline)}})
}

func (c *Client) reschedule(ctx context.Context, req *pb.RescheduleTimerRequest) (*Timer, error) {
	var resp *pb.RescheduleTimerResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.RescheduleTimer(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return timerFrom(resp.GetTimer()), nil
}

// Get reads a pending timer; ErrNotFound if there is none.
func (c *Client) Get(ctx context.Context, namespace, id string) (*Timer, error) {
	var resp *pb.GetTimerResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.GetTimer(ctx, &pb.GetTimerRequest{Namespace: namespace, Id: []byte(id)})
		return err
	})
	if err != nil {
		return nil, err
	}
	return timerFrom(resp.GetTimer()), nil
}

// Stats reads lawnd's statistics (pending timers, outbox, per namespace and, for admins, per shard).
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var resp *pb.GetStatsResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.GetStats(ctx, &pb.GetStatsRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &Stats{PendingTimers: resp.GetPendingTimers(), Outbox: resp.GetOutbox(), Redeliveries: resp.GetRedeliveries(),
		Namespaces: make(map[string]NamespaceStats, len(resp.GetNamespaces()))}
	for _, n := range resp.GetNamespaces() {
		s.Namespaces[n.GetNamespace()] = NamespaceStats{PendingTimers: n.GetPendingTimers(), Outbox: n.GetOutbox(),
			Subscribers: n.GetSubscribers()}
	}
	for _, sh := range resp.GetShards() {
		s.Shards = append(s.Shards, ShardStats{Shard: sh.GetShard(), PendingTimers: sh.GetPendingTimers(),
			LawnTimers: sh.GetLawnTimers(), WheelTimers: sh.GetWheelTimers(), LawnBuckets: sh.GetLawnBuckets()})
	}
	return s, nil
}
