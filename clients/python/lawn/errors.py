"""Exceptions of the lawn client: one class per gRPC status code, all subclasses of LawnError.

Why one class per code: callers handle outcomes, not transports (`except lawn.AlreadyExists:` rather than
inspecting grpc.RpcError.code()), and the same classes serve whole calls and the per-item results of
StartTimers, whose codes arrive as google.rpc.Code integers rather than as RpcErrors.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

import grpc


class LawnError(Exception):
    """A call to lawnd (or one item of a batch) failed; `code` is the grpc.StatusCode, `message` lawnd's text."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN
    # Set by start_many(raise_errors=True): every item's StartResult, so a raise loses no outcome.
    results: Optional[list] = None

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class Cancelled(LawnError):
    code = grpc.StatusCode.CANCELLED


class Unknown(LawnError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(LawnError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(LawnError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(LawnError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(LawnError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(LawnError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(LawnError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(LawnError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(LawnError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(LawnError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(LawnError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(LawnError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(LawnError):
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(LawnError):
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(LawnError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: Dict[grpc.StatusCode, Type[LawnError]] = {
    cls.code: cls for cls in LawnError.__subclasses__()
}
_BY_NUMBER: Dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}


def error_for(code: grpc.StatusCode, message: str) -> LawnError:
    """The LawnError subclass for `code`, carrying `message`."""
    return _BY_CODE.get(code, LawnError)(message, code)


def error_for_number(number: int, message: str) -> LawnError:
    """As error_for, for a google.rpc.Code integer (StartTimerResult.code)."""
    return error_for(_BY_NUMBER.get(number, grpc.StatusCode.UNKNOWN), message)


def from_rpc_error(e: grpc.RpcError) -> LawnError:
    """The LawnError for a failed call (sync grpc.RpcError or grpc.aio.AioRpcError)."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = e.details() if hasattr(e, "details") else str(e)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "")
