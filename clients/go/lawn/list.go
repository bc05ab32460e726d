package lawn

import (
	"context"

	pb "lawn.dev/proto/lawn/v1"
)

// Timers iterates over a namespace's pending timers in id order, one ListTimers call per page as it goes:
//
//	it := client.List(ctx, "billing", 0)
//	for it.Next() {
//		fmt.Println(it.Timer().ID)
//	}
//	if err := it.Err(); err != nil { ... }
type Timers struct {
	client   *Client
	ctx      context.Context
	request  pb.ListTimersRequest
	page     []*pb.Timer
	current  *Timer
	lastPage bool
	err      error
}

// List returns an iterator over the pending timers of namespace; pageSize 1..1000 timers per call (0: 100).
func (c *Client) List(ctx context.Context, namespace string, pageSize int) *Timers {
	it := &Timers{client: c, ctx: ctx}
	it.request.Namespace = namespace
	it.request.PageSize = int32(pageSize)
	if pageSize < 0 || pageSize > 1000 {
		it.err = invalid("page size %d is outside 1..1000 (0 means 100)", pageSize)
	}
	return it
}

// Next advances to the next timer, fetching a page when needed; false at the end or on an error (see Err).
func (it *Timers) Next() bool {
	for len(it.page) == 0 {
		if it.err != nil || it.lastPage {
			it.current = nil
			return false
		}
		var resp *pb.ListTimersResponse
		it.err = it.client.call(it.ctx, func(ctx context.Context) (err error) {
			resp, err = it.client.stub.ListTimers(ctx, &it.request)
			return err
		})
		if it.err != nil {
			continue
		}
		it.page = resp.GetTimers()
		it.request.PageToken = resp.GetNextPageToken()
		it.lastPage = it.request.PageToken == ""
	}
	it.current = timerFrom(it.page[0])
	it.page = it.page[1:]
	return true
}

// Timer is the timer Next moved to.
func (it *Timers) Timer() *Timer { return it.current }

// Err is the error that ended the iteration, nil if it reached the end.
func (it *Timers) Err() error { return it.err }
