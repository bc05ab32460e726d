// Package lawn is the Go client of lawnd, the lawn timer daemon.
//
//	client, err := lawn.Dial("127.0.0.1:7070")
//	if err != nil { ... }
//	defer client.Close()
//	_, err = client.Start(ctx, lawn.TimerSpec{Namespace: "billing", ID: "invoice-42", TTL: 30 * time.Second})
//	sub, _ := client.Subscribe(ctx, "billing", nil)
//	for exp := range sub.Expirations() {
//		handle(exp.Timer)
//		exp.Ack()
//	}
//
// Every call takes a context.Context; without a deadline of its own a unary call gets the client's default
// timeout (WithTimeout, 10 s). Errors from lawnd are *Error values that match the sentinels named after
// their gRPC codes with errors.Is (ErrAlreadyExists, ErrNotFound, ErrInvalidArgument, ...), and
// status.Code(err) works on them too.
//
// Delivery is at least once: an expiration that is not acked (the handler failed, the process died, the
// stream broke before the ack went out) is delivered again, to this or another subscriber, after lawnd's
// ack_timeout or as soon as its stream ends, so handlers must tolerate duplicates (Attempt > 1 marks a
// redelivery). A Subscription reconnects by itself, with backoff, when its stream breaks.
//
// The gRPC stubs it uses (import path lawn.dev/proto/lawn/v1) are generated from the repository's proto/ by
// clients/go/gopath.sh, never checked in.
package lawn
