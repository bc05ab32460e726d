"""Expiration: one delivery of a fired timer to a subscription, and its ack.

An expiration is acked by ack(), by leaving a `with` block around it without an exception, or (with the
subscription's auto_ack) once the caller asks for the next one. An exception inside the block leaves it
unacked on purpose: lawnd delivers it again after its ack_timeout, or as soon as the stream ends. ack() never
blocks: it queues the delivery id for the stream's writer, which sends acks in batches.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Optional

from lawn.types import Timer


class Expiration:
    """A fired timer as delivered: the timer, when it fired, and the delivery to ack.

    Thread-safe: ack() may be called from any thread. Acking twice is harmless (the second does nothing), as
    is acking after the subscription closed or reconnected: lawnd only counts acks on the stream that holds
    the delivery, and delivers it again on the new one.
    """

    __slots__ = ("timer", "fired_at", "delivery_id", "attempt", "late", "_acker")

    def __init__(self, timer: Timer, fired_at: dt.datetime, delivery_id: int, attempt: int, late: bool,
                 acker: Optional[Callable[[int], None]]) -> None:
        self.timer = timer
        self.fired_at = fired_at
        # Names this delivery for the ack; a redelivery on the same lawnd carries the same id.
        self.delivery_id = delivery_id
        # 1 for the first delivery, +1 for each redelivery: more than 1 means an earlier one was not acked.
        self.attempt = attempt
        # Fired more than 1 s (or a tick) after its deadline, e.g. because lawnd was down.
        self.late = late
        self._acker = acker  # None in observe mode and once acked.

    def ack(self) -> None:
        """Tells lawnd this expiration is handled, so it is not delivered again."""
        acker, self._acker = self._acker, None
        if acker is not None:
            acker(self.delivery_id)

    @property
    def acked(self) -> bool:
        """True once ack() ran (or in observe mode, where there is nothing to ack)."""
        return self._acker is None

    def __enter__(self) -> "Expiration":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.ack()
        return False

    def __repr__(self) -> str:
        return (f"Expiration(namespace={self.timer.namespace!r}, id={self.timer.id!r}, "
                f"delivery_id={self.delivery_id}, attempt={self.attempt}, late={self.late})")


def expirations_from(response, acker: Optional[Callable[[int], None]]):
    """The expirations of one SubscribeResponse, in delivery order (batched or the original one-per-message)."""
    from lawn._convert import datetime_from, timer_from

    messages = list(response.expirations) or ([response.expiration] if response.HasField("expiration") else [])
    return [Expiration(timer_from(e.timer), datetime_from(e.fired_at), e.delivery_id, e.attempt, e.late, acker)
            for e in messages]
