"""lawn.aio.Subscription: lawn.Subscription for asyncio (`async with`, `async for`), over grpc.aio.

Acks, batching, reconnect with backoff, observe mode and close() behave as in lawn.subscription, whose
docstring is the reference. Here one task per stream writes `open` and the batched acks; the iterating task
reads. Expiration.ack() may be called from any thread: off the loop's thread it hops onto the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Deque, List, Optional

import grpc
import grpc.aio

from lawn._stubs import timer_pb2 as pb
from lawn.backoff import Backoff
from lawn.errors import from_rpc_error
from lawn.expiration import Expiration, expirations_from
from lawn.subscription import RETRYABLE


class _Stream:
    """One Subscribe call and the task that writes its requests (open, batched acks, half-close)."""

    def __init__(self, stub, open_request, metadata, ack_batch: int, ack_linger: float, observe: bool) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._acks: List[int] = []
        self._wake = asyncio.Event()
        self._ending = False
        self._reader_waiting = False
        self._ack_batch = ack_batch
        self._ack_linger = ack_linger
        self.ack = None if observe else self._ack
        self.call = stub.Subscribe(metadata=metadata)
        self._writer = asyncio.create_task(self._write(open_request))

    async def _write(self, open_request) -> None:
        try:
            await self.call.write(open_request)
            while True:
                while not self._acks and not self._ending:
                    self._wake.clear()
                    await self._wake.wait()
                flush_at = self._loop.time() + self._ack_linger
                while not self._ending and not self._reader_waiting and len(self._acks) < self._ack_batch:
                    remaining = flush_at - self._loop.time()
                    if remaining <= 0:
                        break
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), remaining)
                    except asyncio.TimeoutError:
                        break
                # Taken together: acks added during the write below go out before the half-close.
                ids, self._acks = self._acks, []
                ending = self._ending
                if ids:
                    await self.call.write(pb.SubscribeRequest(ack=pb.SubscribeRequest.Ack(delivery_ids=ids)))
                if ending:
                    await self.call.done_writing()
                    return
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError):
            return  # The call has ended; the reader sees how.

    def _ack(self, delivery_id: int) -> None:
        if threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self._ack, delivery_id)
            return
        if not self._ending:
            self._acks.append(delivery_id)
            self._wake.set()

    def set_reader_waiting(self, waiting: bool) -> None:
        self._reader_waiting = waiting
        if waiting:
            self._wake.set()

    def end(self) -> None:
        """Sends the waiting acks, then half-closes."""
        self._ending = True
        self._wake.set()

    async def finish(self, grace: float) -> None:
        """end(), then reads what lawnd still sends until it ends the call; cancels after `grace` seconds."""
        self.end()

        async def drain() -> None:
            while True:
                try:
                    if await self.call.read() is grpc.aio.EOF:
                        return
                except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                    return
                except asyncio.CancelledError:
                    if self.call.done():
                        return  # The call was cancelled (see Subscription.__anext__), not this task.
                    raise

        try:
            await asyncio.wait_for(drain(), grace)
        except asyncio.TimeoutError:
            self.call.cancel()
        if not self._writer.done():
            self._writer.cancel()
        await asyncio.gather(self._writer, return_exceptions=True)


class Subscription:
    """Async iterator of Expirations; see lawn.subscription. Made by lawn.aio.Client.subscribe."""

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
        self._ack_batch = max(1, (max_in_flight or 100) // 2)
        self.namespace = namespace
        self.reconnects = 0
        self._closed = False
        self._closed_event: Optional[asyncio.Event] = None  # Set by close().
        self._reader_idle: Optional[asyncio.Event] = None  # Clear while a task waits in read().
        self._reading = False
        self._buffer: Deque[Expiration] = deque()
        self._last: Optional[Expiration] = None
        self._stream: Optional[_Stream] = None

    def _open_stream(self) -> _Stream:
        if self._closed_event is None:  # Made here, on the loop, not in __init__ (maybe outside one).
            self._closed_event = asyncio.Event()
            self._reader_idle = asyncio.Event()
            self._reader_idle.set()
        self._stream = _Stream(self._stub, self._open, self._metadata, self._ack_batch, self._ack_linger,
                               self._observe)
        return self._stream

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Expiration:
        """The next expiration; waits until lawnd sends one. StopAsyncIteration once closed."""
        if self._auto_ack and self._last is not None:
            self._last.ack()
        self._last = None
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._buffer:
                self._last = self._buffer.popleft()
                return self._last
            stream = self._stream or self._open_stream()
            error: Optional[grpc.aio.AioRpcError] = None
            response = grpc.aio.EOF
            stream.set_reader_waiting(True)
            self._reading = True
            self._reader_idle.clear()
            try:
                response = await stream.call.read()
            except grpc.aio.AioRpcError as e:
                error = e
            except asyncio.CancelledError:
                # grpc.aio raises this in the reader when the call, not the task, is cancelled (e.g. the
                # channel was closed): then the stream has ended; a cancelled task stays cancelled.
                task = asyncio.current_task()
                if not stream.call.done() or (task is not None and getattr(task, "cancelling", lambda: 0)()):
                    raise
            finally:
                self._reading = False
                self._reader_idle.set()
                stream.set_reader_waiting(False)
            if response is not grpc.aio.EOF:
                self._backoff.reset()
                if not self._closed:
                    self._buffer.extend(expirations_from(response, stream.ack))
                continue
            await self._replace_broken_stream(stream, error)

    async def _replace_broken_stream(self, stream: _Stream, error: Optional[grpc.aio.AioRpcError]) -> None:
        if self._closed:
            raise StopAsyncIteration
        await stream.finish(0)
        if error is not None and (not self._reconnect or error.code() not in RETRYABLE):
            await self.close()
            raise from_rpc_error(error) from None
        if not self._reconnect:
            await self.close()
            raise StopAsyncIteration
        try:
            await asyncio.wait_for(self._closed_event.wait(), self._backoff.next_delay())
        except asyncio.TimeoutError:
            pass
        if self._closed:
            raise StopAsyncIteration
        self._buffer.clear()
        try:
            self._open_stream()
        except (ValueError, RuntimeError, grpc.aio.UsageError):
            await self.close()  # The client's channel is closed, and its subscriptions with it.
            raise StopAsyncIteration from None
        self.reconnects += 1

    async def close(self) -> None:
        """Sends waiting acks, half-closes, lets lawnd end the stream (cancels after close_grace). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._closed_event is not None:
            self._closed_event.set()
        self._buffer.clear()  # Unacked: lawnd gives them to another subscriber when the stream ends.
        stream = self._stream
        if stream is None:
            return
        if self._reading:
            # Another task waits in read(): it sees the end once lawnd answers the half-close, and leaves.
            stream.end()
            try:
                await asyncio.wait_for(self._reader_idle.wait(), self._close_grace)
            except asyncio.TimeoutError:
                stream.call.cancel()
        await stream.finish(self._close_grace)

    async def __aenter__(self) -> "Subscription":
        if self._stream is None and not self._closed:
            self._open_stream()  # Opened now so an observer sees expirations from here on.
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and self._auto_ack and self._last is not None:
            self._last.ack()
        await self.close()
        return False
