"""Conversions between the client's values (lawn.types) and lawn.v1 messages, shared by both clients.

The sync and asyncio clients differ only in how they make calls; building requests and reading responses is
the same code, so the two cannot disagree on what a call means.
"""

from __future__ import annotations

import datetime as dt
from typing import List, Optional

from lawn._stubs import timer_pb2 as pb
from lawn.errors import error_for_number
from lawn.types import NamespaceStats, Seconds, ShardStats, StartResult, Stats, Timer, TimerId, TimerSpec

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_NS_PER_US = 1000


def timer_id(value: TimerId) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _duration_ns(value: Seconds, what: str) -> int:
    if isinstance(value, dt.timedelta):
        return (value // dt.timedelta(microseconds=1)) * _NS_PER_US
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(value * 1_000_000_000)
    raise TypeError(f"{what} must be a datetime.timedelta or seconds as a number, not {type(value).__name__}")


def _timestamp_ns(value: dt.datetime) -> int:
    if not isinstance(value, dt.datetime):
        raise TypeError(f"deadline must be a datetime.datetime, not {type(value).__name__}")
    if value.tzinfo is None:
        # A naive datetime is local time to some callers and UTC to others: refuse to guess.
        raise ValueError("deadline must be timezone-aware (e.g. datetime.now(timezone.utc) + timedelta(...))")
    return ((value - _EPOCH) // dt.timedelta(microseconds=1)) * _NS_PER_US


def _set_when(request, ttl: Optional[Seconds], deadline: Optional[dt.datetime]) -> None:
    """Fills the request's oneof `when`; exactly one of ttl and deadline, as lawnd requires."""
    if (ttl is None) == (deadline is None):
        raise ValueError("give exactly one of ttl and deadline")
    if ttl is not None:
        request.ttl.FromNanoseconds(_duration_ns(ttl, "ttl"))
    else:
        request.deadline.FromNanoseconds(_timestamp_ns(deadline))


def start_request(spec: TimerSpec) -> "pb.StartTimerRequest":
    request = pb.StartTimerRequest(namespace=spec.namespace, id=timer_id(spec.id), payload=bytes(spec.payload),
                                   replace=spec.replace)
    _set_when(request, spec.ttl, spec.deadline)
    if spec.interval is not None:
        request.interval.FromNanoseconds(_duration_ns(spec.interval, "interval"))
    return request


def reschedule_request(namespace: str, id: TimerId, ttl: Optional[Seconds],
                       deadline: Optional[dt.datetime]) -> "pb.RescheduleTimerRequest":
    request = pb.RescheduleTimerRequest(namespace=namespace, id=timer_id(id))
    _set_when(request, ttl, deadline)
    return request


def _timedelta(d) -> dt.timedelta:
    return dt.timedelta(seconds=d.seconds, microseconds=d.nanos // _NS_PER_US)


def datetime_from(ts) -> dt.datetime:
    return _EPOCH + dt.timedelta(seconds=ts.seconds, microseconds=ts.nanos // _NS_PER_US)


def timer_from(t: "pb.Timer") -> Timer:
    return Timer(namespace=t.namespace, id=t.id, ttl=_timedelta(t.ttl), deadline=datetime_from(t.deadline),
                 payload=t.payload, interval=_timedelta(t.interval) if t.HasField("interval") else None)


def stats_from(s: "pb.GetStatsResponse") -> Stats:
    return Stats(
        pending_timers=s.pending_timers, outbox=s.outbox, redeliveries=s.redeliveries,
        shards=[ShardStats(shard=x.shard, pending_timers=x.pending_timers, lawn_timers=x.lawn_timers,
                           wheel_timers=x.wheel_timers, lawn_buckets=x.lawn_buckets) for x in s.shards],
        namespaces={n.namespace: NamespaceStats(namespace=n.namespace, pending_timers=n.pending_timers,
                                                outbox=n.outbox, subscribers=n.subscribers)
                    for n in s.namespaces})


def start_batches(specs: List[TimerSpec], batch_size: int, batch_bytes: int, return_timers: bool):
    """Yields (specs, StartTimersRequest) of at most batch_size items and about batch_bytes bytes each (a
    single larger item goes alone), so that no call passes lawnd's max_message_bytes (4 MiB by default)."""
    batch: List[TimerSpec] = []
    items = []
    size = 0
    for spec in specs:
        item = start_request(spec)
        item_size = item.ByteSize() + 4  # + the field's tag and length in the batch
        if batch and (len(batch) == batch_size or size + item_size > batch_bytes):
            yield batch, pb.StartTimersRequest(timers=items, return_timers=return_timers)
            batch, items, size = [], [], 0
        batch.append(spec)
        items.append(item)
        size += item_size
    if batch:
        yield batch, pb.StartTimersRequest(timers=items, return_timers=return_timers)


def start_results(batch: List[TimerSpec], response: "pb.StartTimersResponse") -> List[StartResult]:
    """Pairs a StartTimers response with the specs of its request, in order."""
    if len(response.results) != len(batch):
        raise RuntimeError(f"lawnd answered {len(response.results)} results for {len(batch)} timers")
    return [StartResult(spec=spec,
                        error=error_for_number(r.code, r.message) if r.code else None,
                        timer=timer_from(r.timer) if r.HasField("timer") else None)
            for spec, r in zip(batch, response.results)]


def raise_first_error(results: List[StartResult]) -> List[StartResult]:
    """Raises the first failed item's error, naming the item and carrying all results; else returns them."""
    for i, r in enumerate(results):
        if r.error is not None:
            error = type(r.error)(f"item {i} (id {r.spec.id!r}): {r.error.message}", r.error.code)
            error.results = results
            raise error
    return results
