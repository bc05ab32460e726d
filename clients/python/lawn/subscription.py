"""Subscription: an iterator of a namespace's expirations over lawnd's Subscribe stream, reconnecting.

    with client.subscribe("billing") as expirations:
        for exp in expirations:
            handle(exp.timer)          # acked when the loop asks for the next one (auto_ack)

Delivery is at least once. An expiration that is not acked (the handler raised, the process died, the stream
broke before the ack went out) is delivered again, by this or another subscriber, after lawnd's ack_timeout
or as soon as its stream ends: handlers must tolerate duplicates (`attempt` > 1 marks a redelivery).

- Acks: Expiration.ack(), leaving `with exp:` cleanly, or with auto_ack (the default) asking for the next
  expiration, or leaving the subscription's `with` block cleanly (acks the last one handed out). Acks are
  batched: they go out together at most `ack_linger` seconds after the first of them, at once when half of
  max_in_flight are waiting or when the iterator waits for lawnd, so a full window of finished work is never
  held back.
- Batches: the stream asks lawnd for up to max_batch expirations per message (as the C++ client does); the
  iterator still yields them one at a time.
- Reconnect: when the stream breaks (lawnd restarts or drains, the connection drops) or lawnd ends it
  without being asked, the iterator opens a new one after an exponential backoff with jitter (reset once a
  stream delivers). Expirations received but not yet yielded are dropped then; lawnd redelivers them, as it
  does those yielded and not yet acked (a late ack() of one of those is ignored). Errors a retry cannot fix
  (InvalidArgument, Unauthenticated, PermissionDenied, ...) end the subscription: next() raises them.
- Observe mode: a best-effort copy of every expiration, nothing to ack, nothing redelivered.
- close() (also leaving the `with` block) sends the waiting acks, half-closes, and waits up to `close_grace`
  seconds for lawnd to end the stream before cancelling it; a blocked next() in another thread then stops.

Thread-safety: iterate from one thread at a time; ack() and close() may be called from any thread.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Deque, Iterator, List, Optional

import grpc

from lawn._stubs import timer_pb2 as pb
from lawn.backoff import Backoff
from lawn.errors import from_rpc_error
from lawn.expiration import Expiration, expirations_from

# Codes after which a new stream may well succeed; any other ends the subscription with its error.
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
                       grpc.StatusCode.ABORTED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED,
                       grpc.StatusCode.RESOURCE_EXHAUSTED})


class _Stream:
    """One Subscribe call: its request generator (open, then batched acks) and its response iterator."""

    def __init__(self, stub, open_request, metadata, ack_batch: int, ack_linger: float, observe: bool) -> None:
        self._cond = threading.Condition()
        self._acks: List[int] = []
        self._ending = False
        self._reader_waiting = False
        self._ack_batch = ack_batch
        self._ack_linger = ack_linger
        # What Expiration.ack calls; None in observe mode, where lawnd takes no acks.
        self.ack = None if observe else self._ack
        self.responses = stub.Subscribe(self._requests(open_request), metadata=metadata)

    def _requests(self, open_request) -> Iterator:
        """Runs on gRPC's request thread: yields `open`, then acks in batches, then returns (half-close)."""
        yield open_request
        while True:
            with self._cond:
                while not self._acks and not self._ending:
                    self._cond.wait()
                # Let acks pile up for a moment unless the window needs them or nothing else is coming.
                flush_at = time.monotonic() + self._ack_linger
                while (not self._ending and not self._reader_waiting and len(self._acks) < self._ack_batch
                       and time.monotonic() < flush_at):
                    self._cond.wait(flush_at - time.monotonic())
                ids, self._acks = self._acks, []
                ending = self._ending
            if ids:
                yield pb.SubscribeRequest(ack=pb.SubscribeRequest.Ack(delivery_ids=ids))
            if ending:
                return

    def _ack(self, delivery_id: int) -> None:
        with self._cond:
            if not self._ending:
                self._acks.append(delivery_id)
                self._cond.notify()

    def set_reader_waiting(self, waiting: bool) -> None:
        """The iterator is (not) blocked on lawnd: acks then go at once, since nothing else is coming."""
        with self._cond:
            self._reader_waiting = waiting
            if waiting:
                self._cond.notify()

    def end(self) -> None:
        """Sends the waiting acks, then half-closes. Also releases gRPC's request thread on a broken stream."""
        with self._cond:
            self._ending = True
            self._cond.notify()


class Subscription:
    """Iterator of Expirations; see the module docstring. Made by Client.subscribe."""

    def __init__(self, stub, namespace: str, *, metadata, max_in_flight: int = 100, max_batch: int = 1000,
                 observe: bool = False, auto_ack: bool = True, reconnect: bool = True,
                 backoff: Optional[Backoff] = None, ack_linger: float = 0.02, close_grace: float = 2.0) -> None:
        self._stub = stub
        self._metadata = metadata
        self._open = pb.SubscribeRequest(open=pb.SubscribeRequest.Open(
            namespace=namespace, max_in_flight=max_in_flight, observe=observe, max_batch=max_batch))
        self._observe = observe
        self._auto_ack = auto_ack and not observe
        self._reconnect = reconnect
        self._backoff = backoff or Backoff()
        self._ack_linger = ack_linger
        self._close_grace = close_grace
        # Half the window lawnd grants (0 asks for its default, 100): acks sent once that many wait.
        self._ack_batch = max(1, (max_in_flight or 100) // 2)
        self.namespace = namespace
        self.reconnects = 0  # Streams opened after the first; for logs and tests.

        self._cond = threading.Condition()
        self._closed = False
        self._reading = False  # The iterator is inside next(responses).
        self._buffer: Deque[Expiration] = deque()  # Received on the current stream, not yet yielded.
        self._last: Optional[Expiration] = None  # Yielded last; auto-acked by the next request.
        # Opened at once so that an observer sees expirations from now on, not from its first next().
        self._stream: Optional[_Stream] = self._new_stream()

    def _new_stream(self) -> _Stream:
        return _Stream(self._stub, self._open, self._metadata, self._ack_batch, self._ack_linger, self._observe)

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> Expiration:
        """The next expiration; blocks until lawnd sends one. StopIteration once closed."""
        if self._auto_ack and self._last is not None:
            self._last.ack()
        self._last = None
        while True:
            with self._cond:
                if self._closed:
                    raise StopIteration
                if self._buffer:
                    self._last = self._buffer.popleft()
                    return self._last
                stream = self._stream
                self._reading = True
            response = None
            error: Optional[grpc.RpcError] = None
            stream.set_reader_waiting(True)
            try:
                response = next(stream.responses)
            except StopIteration:
                pass  # lawnd ended the stream with OK: asked to (close), or draining.
            except grpc.RpcError as e:
                error = e
            finally:
                stream.set_reader_waiting(False)
                with self._cond:
                    self._reading = False
                    self._cond.notify_all()
            if response is not None:
                self._backoff.reset()
                with self._cond:
                    self._buffer.extend(expirations_from(response, stream.ack))
                continue
            self._replace_broken_stream(stream, error)

    def _replace_broken_stream(self, stream: _Stream, error: Optional[grpc.RpcError]) -> None:
        """Opens the next stream after a backoff; raises StopIteration if closed, the error if fatal."""
        stream.end()
        with self._cond:
            if self._closed:
                raise StopIteration
        if error is not None and (not self._reconnect or error.code() not in RETRYABLE):
            self.close()
            raise from_rpc_error(error) from None
        if not self._reconnect:
            self.close()
            raise StopIteration
        delay = self._backoff.next_delay()
        with self._cond:
            # An interruptible sleep: close() wakes it.
            deadline = time.monotonic() + delay
            while not self._closed and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())
            if self._closed:
                raise StopIteration
            try:
                self._stream = self._new_stream()
            except ValueError:  # "Channel closed": the client was closed, and its subscriptions with it.
                self._closed = True
                raise StopIteration from None
            self.reconnects += 1

    def close(self) -> None:
        """Sends waiting acks, half-closes, lets lawnd end the stream (cancels after close_grace). Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            stream = self._stream
            self._buffer.clear()  # Unacked: lawnd gives them to another subscriber when the stream ends.
        if stream is None:
            return
        stream.end()
        cancel = threading.Timer(self._close_grace, stream.responses.cancel)
        cancel.daemon = True
        cancel.start()
        try:
            with self._cond:  # A thread blocked in next() sees the end (OK or CANCELLED) and leaves.
                self._cond.wait_for(lambda: not self._reading, self._close_grace + 1)
            try:
                for _ in stream.responses:
                    pass  # Sent after the half-close: dropped unacked, as above.
            except grpc.RpcError:
                pass
        finally:
            cancel.cancel()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and self._auto_ack and self._last is not None:
            self._last.ack()  # Leaving the block cleanly means the last expiration was handled.
        self.close()
        return False
