package lawn

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "lawn.dev/proto/lawn/v1"
)

// MaxBatch is the most items lawnd takes in one StartTimers call; StartMany splits larger slices.
const MaxBatch = 10000

// Client is a connection to lawnd. It is safe for concurrent use; close it with Close.
type Client struct {
	conn    *grpc.ClientConn
	stub    pb.TimerServiceClient
	timeout time.Duration
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
	return &Client{conn: conn, stub: pb.NewTimerServiceClient(conn), timeout: o.timeout}, nil
}

// Close closes the connection; subscriptions on it end (their channels close).
func (c *Client) Close() error {
	if c.conn.GetState() == connectivity.Shutdown {
		return nil
	}
	return c.conn.Close()
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
	// BatchSize is the number of items per StartTimers call, 1..MaxBatch (0: MaxBatch).
	BatchSize int
}

// StartMany starts many timers in StartTimers calls of up to BatchSize items. Each item succeeds or fails on
// its own: results[i] is specs[i]'s outcome. The error is the first call that failed as a whole (its items,
// and those of later calls, which are not sent, carry it as their Err); items lawnd refused do not make it
// non-nil.
func (c *Client) StartMany(ctx context.Context, specs []TimerSpec, o *StartManyOptions) ([]StartResult, error) {
	if o == nil {
		o = &StartManyOptions{}
	}
	size := o.BatchSize
	if size == 0 {
		size = MaxBatch
	}
	if size < 0 || size > MaxBatch {
		return nil, invalid("BatchSize %d is outside 1..%d", size, MaxBatch)
	}
	results := make([]StartResult, len(specs))
	for begin := 0; begin < len(specs); begin += size {
		end := begin + size
		if end > len(specs) {
			end = len(specs)
		}
		if err := c.startBatch(ctx, specs[begin:end], results[begin:end], o.ReturnTimers); err != nil {
			for i := begin; i < len(specs); i++ {
				results[i] = StartResult{Err: err}
			}
			return results, err
		}
	}
	return results, nil
}

// startBatch sends one StartTimers call. Items the client itself refuses get their error and are left out of
// the call, so a bad item costs no round trip and does not fail the others.
func (c *Client) startBatch(ctx context.Context, specs []TimerSpec, results []StartResult, returnTimers bool) error {
	req := &pb.StartTimersRequest{ReturnTimers: returnTimers, Timers: make([]*pb.StartTimerRequest, 0, len(specs))}
	sent := make([]int, 0, len(specs)) // results index of each item sent
	for i := range specs {
		item, err := specs[i].request()
		if err != nil {
			results[i] = StartResult{Err: err}
			continue
		}
		req.Timers = append(req.Timers, item)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return nil
	}
	var resp *pb.StartTimersResponse
	err := c.call(ctx, func(ctx context.Context) (err error) {
		resp, err = c.stub.StartTimers(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if len(resp.GetResults()) != len(sent) {
		return &Error{Code: ErrInternal.Code, Message: "lawnd answered a different number of results than items sent"}
	}
	for k, r := range resp.GetResults() {
		i := sent[k]
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

// Reschedule moves a pending timer to now + ttl (ttl != 0) or to deadline (non-zero): exactly one. It keeps
// the payload and interval and returns the timer; ErrNotFound if there is none.
func (c *Client) Reschedule(ctx context.Context, namespace, id string, ttl time.Duration, deadline time.Time) (*Timer, error) {
	req := &pb.RescheduleTimerRequest{Namespace: namespace, Id: []byte(id)}
	if err := setWhen(ttl, deadline, func(d *durationpb.Duration) { req.When = &pb.RescheduleTimerRequest_Ttl{Ttl: d} },
		func(t *timestamppb.Timestamp) { req.When = &pb.RescheduleTimerRequest_Deadline{Deadline: t} }); err != nil {
		return nil, err
	}
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
