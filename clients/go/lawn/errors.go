package lawn

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call: lawnd's (or gRPC's) status code and message. It matches the sentinel of its code
// with errors.Is, and status.Code / status.FromError read it as a gRPC status.
type Error struct {
	Code    codes.Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "lawn: " + e.Code.String()
	}
	return "lawn: " + e.Code.String() + ": " + e.Message
}

// Is reports whether target is the sentinel of e's code (a sentinel is an *Error without a message), or
// the context error of a call that its context ended: context.Canceled for Canceled, context.
// DeadlineExceeded for DeadlineExceeded.
func (e *Error) Is(target error) bool {
	switch target {
	case context.Canceled:
		return e.Code == codes.Canceled
	case context.DeadlineExceeded:
		return e.Code == codes.DeadlineExceeded
	}
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// GRPCStatus lets status.FromError and status.Code read the error as the status it came from.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Sentinels, one per status code that lawnd answers; compare with errors.Is(err, lawn.ErrNotFound).
var (
	ErrCanceled           = &Error{Code: codes.Canceled}
	ErrUnknown            = &Error{Code: codes.Unknown}
	ErrInvalidArgument    = &Error{Code: codes.InvalidArgument}
	ErrDeadlineExceeded   = &Error{Code: codes.DeadlineExceeded}
	ErrNotFound           = &Error{Code: codes.NotFound}
	ErrAlreadyExists      = &Error{Code: codes.AlreadyExists}
	ErrPermissionDenied   = &Error{Code: codes.PermissionDenied}
	ErrResourceExhausted  = &Error{Code: codes.ResourceExhausted}
	ErrFailedPrecondition = &Error{Code: codes.FailedPrecondition}
	ErrAborted            = &Error{Code: codes.Aborted}
	ErrUnimplemented      = &Error{Code: codes.Unimplemented}
	ErrInternal           = &Error{Code: codes.Internal}
	ErrUnavailable        = &Error{Code: codes.Unavailable}
	ErrUnauthenticated    = &Error{Code: codes.Unauthenticated}
)

// fromRPC turns what a stub returned into an *Error (nil stays nil). A context's own error becomes
// Canceled or DeadlineExceeded, as gRPC reports it.
func fromRPC(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Code: codes.Canceled, Message: err.Error()}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: codes.DeadlineExceeded, Message: err.Error()}
	}
	s := status.Convert(err)
	return &Error{Code: s.Code(), Message: s.Message()}
}

// invalid is an argument the client refuses before sending anything; it matches ErrInvalidArgument, as
// lawnd's answer to the same request would.
func invalid(format string, args ...interface{}) error {
	return &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// codeOf reads a google.rpc.Code carried as an int32 (StartTimerResult.code).
func codeOf(c int32) codes.Code {
	if c < 0 {
		return codes.Unknown
	}
	return codes.Code(uint32(c))
}
