"""lawn: the Python client of lawnd, the networked timer daemon.

    import lawn
    client = lawn.Client("127.0.0.1:7070")
    client.start("billing", "invoice-42", ttl=30, payload=b"remind")
    with client.subscribe("billing") as expirations:
        for exp in expirations:
            print(exp.timer.id, exp.timer.payload)   # acked when the loop moves on

lawn.Client blocks; lawn.aio.Client is the same surface for asyncio. The lawn.v1 protobuf and gRPC modules
are generated from proto/ (see lawn._stubs), importable as lawn.v1.timer_pb2 and lawn.v1.timer_pb2_grpc.
"""

from lawn.backoff import Backoff
from lawn.client import DEFAULT_ADDRESS, Client
from lawn.connection import TLS
from lawn.errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, FailedPrecondition,
                         Internal, InvalidArgument, LawnError, NotFound, OutOfRange, PermissionDenied,
                         ResourceExhausted, Unauthenticated, Unavailable, Unimplemented, Unknown)
from lawn.expiration import Expiration
from lawn.subscription import Subscription
from lawn.types import NamespaceStats, ShardStats, StartResult, Stats, Timer, TimerSpec

__version__ = "0.1.0"

__all__ = [
    "Aborted", "AlreadyExists", "Backoff", "Cancelled", "Client", "DEFAULT_ADDRESS", "DataLoss",
    "DeadlineExceeded", "Expiration", "FailedPrecondition", "Internal", "InvalidArgument", "LawnError",
    "NamespaceStats", "NotFound", "OutOfRange", "PermissionDenied", "ResourceExhausted", "ShardStats",
    "StartResult", "Stats", "Subscription", "TLS", "Timer", "TimerSpec", "Unauthenticated", "Unavailable",
    "Unimplemented", "Unknown",
]
