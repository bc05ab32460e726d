"""The values the client takes and returns: plain dataclasses instead of protobuf messages.

Why not the generated messages: they need the stubs imported to be built, their oneof `when` is easy to get
wrong, and their Timestamp/Duration fields are not datetime/timedelta. Times are timezone-aware UTC datetimes
and timedeltas here; lawnd keeps nanoseconds, these keep microseconds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

# A timer id: bytes on the wire (1..256 of them); a str is sent as its UTF-8 encoding.
TimerId = Union[str, bytes]
# A TTL or interval: a timedelta, or seconds as a number.
Seconds = Union[dt.timedelta, int, float]


@dataclass(frozen=True)
class Timer:
    """A pending timer, as lawnd stores it."""

    namespace: str
    id: bytes
    # The TTL the timer was armed with (for an absolute deadline: deadline minus the time it was started).
    ttl: dt.timedelta
    deadline: dt.datetime
    payload: bytes = b""
    # Repeat interval of a recurring timer; None for a one-shot timer.
    interval: Optional[dt.timedelta] = None


@dataclass(frozen=True)
class TimerSpec:
    """One timer to start with Client.start_many: exactly one of ttl and deadline."""

    namespace: str
    id: TimerId
    ttl: Optional[Seconds] = None
    deadline: Optional[dt.datetime] = None
    payload: bytes = b""
    interval: Optional[Seconds] = None
    # Replace a pending timer with the same id instead of failing with AlreadyExists.
    replace: bool = False


@dataclass(frozen=True)
class StartResult:
    """The outcome of one TimerSpec of Client.start_many.

    Read it as a value (`error` is None on success) or let it raise (`result()`), whichever suits the caller.
    """

    spec: TimerSpec
    error: Optional[Exception] = None  # A lawn.LawnError subclass, e.g. AlreadyExists, when the item failed.
    # The started timer, when start_many was called with return_timers=True and the item succeeded.
    timer: Optional[Timer] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def result(self) -> Optional[Timer]:
        """The started timer (None unless return_timers), or raises the item's LawnError."""
        if self.error is not None:
            raise self.error
        return self.timer


@dataclass(frozen=True)
class NamespaceStats:
    namespace: str
    pending_timers: int
    outbox: int  # Fired expirations not yet acked.
    subscribers: int


@dataclass(frozen=True)
class ShardStats:
    shard: int
    pending_timers: int
    lawn_timers: int
    wheel_timers: int
    lawn_buckets: int


@dataclass(frozen=True)
class Stats:
    """GetStats: totals over the namespaces the caller may read; shards only for an `admin` token."""

    pending_timers: int
    outbox: int
    redeliveries: int
    shards: List[ShardStats] = field(default_factory=list)
    namespaces: Dict[str, NamespaceStats] = field(default_factory=dict)
