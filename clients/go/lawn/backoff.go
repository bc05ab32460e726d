package lawn

import (
	"math/rand"
	"time"
)

// Backoff is how long a Subscription waits before it opens a new stream: Initial after the first failure,
// doubling up to Max, each wait drawn from [d/2, d] (jitter, so that many subscribers do not reconnect in
// step). It starts over once a stream delivers.
type Backoff struct {
	Initial time.Duration // default 100 ms
	Max     time.Duration // default 10 s
}

type backoffState struct {
	Backoff
	next time.Duration
}

func newBackoff(b Backoff) *backoffState {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	return &backoffState{Backoff: b, next: b.Initial}
}

func (s *backoffState) reset() { s.next = s.Initial }

func (s *backoffState) delay() time.Duration {
	d := s.next
	if s.next *= 2; s.next > s.Max {
		s.next = s.Max
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}
