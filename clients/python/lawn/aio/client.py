"""lawn.aio.Client: lawn.Client's methods as coroutines, over a grpc.aio channel.

Make it inside a running event loop (grpc.aio binds its channel to the loop) and use it from that loop only;
close it with `await client.close()` or `async with`. Errors, values and their meaning are lawn.Client's.
"""

from __future__ import annotations

import datetime as dt
from typing import AsyncIterator, Iterable, List, Optional, Union

import grpc
import grpc.aio

from lawn import _convert
from lawn._stubs import timer_pb2 as pb
from lawn._stubs import timer_pb2_grpc as pb_grpc
from lawn.aio.subscription import Subscription
from lawn.backoff import Backoff
from lawn.client import DEFAULT_ADDRESS, MAX_BATCH, MAX_BATCH_BYTES
from lawn.connection import TLS, call_metadata, channel_options, check_token, resolve_tls
from lawn.errors import from_rpc_error
from lawn.types import Seconds, StartResult, Stats, Timer, TimerId, TimerSpec


class Client:
    """As lawn.Client (address, token, tls, timeout), with coroutine methods."""

    def __init__(self, address: str = DEFAULT_ADDRESS, token: Optional[str] = None,
                 tls: Union[TLS, bool, None] = None, *, timeout: Optional[float] = 10.0) -> None:
        check_token(token)
        tls = resolve_tls(tls)
        options = channel_options(tls)
        if tls is None:
            self._channel = grpc.aio.insecure_channel(address, options=options)
        else:
            self._channel = grpc.aio.secure_channel(address, tls.credentials(), options=options)
        self._stub = pb_grpc.TimerServiceStub(self._channel)
        self._metadata = call_metadata(token)
        self._timeout = timeout
        self.address = address

    async def _call(self, method, request):
        try:
            return await method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(e) from None

    async def start(self, namespace: str, id: TimerId, *, ttl: Optional[Seconds] = None,
                    deadline: Optional[dt.datetime] = None, payload: bytes = b"",
                    interval: Optional[Seconds] = None, replace: bool = False) -> Timer:
        """See lawn.Client.start."""
        spec = TimerSpec(namespace, id, ttl=ttl, deadline=deadline, payload=payload, interval=interval,
                         replace=replace)
        response = await self._call(self._stub.StartTimer, _convert.start_request(spec))
        return _convert.timer_from(response.timer)

    async def start_many(self, specs: Iterable[TimerSpec], *, return_timers: bool = False,
                         raise_errors: bool = False, batch_size: int = MAX_BATCH,
                         batch_bytes: int = MAX_BATCH_BYTES) -> List[StartResult]:
        """See lawn.Client.start_many: calls of up to batch_size specs and about batch_bytes bytes."""
        specs = list(specs)
        if not 1 <= batch_size <= MAX_BATCH or batch_bytes < 1:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH} and batch_bytes positive")
        results: List[StartResult] = []
        for batch, request in _convert.start_batches(specs, batch_size, batch_bytes, return_timers):
            results += _convert.start_results(batch, await self._call(self._stub.StartTimers, request))
        return _convert.raise_first_error(results) if raise_errors else results

    async def delete(self, namespace: str, id: TimerId) -> Timer:
        """See lawn.Client.delete."""
        request = pb.DeleteTimerRequest(namespace=namespace, id=_convert.timer_id(id))
        return _convert.timer_from((await self._call(self._stub.DeleteTimer, request)).timer)

    async def reschedule(self, namespace: str, id: TimerId, *, ttl: Optional[Seconds] = None,
                         deadline: Optional[dt.datetime] = None) -> Timer:
        """See lawn.Client.reschedule."""
        request = _convert.reschedule_request(namespace, id, ttl, deadline)
        return _convert.timer_from((await self._call(self._stub.RescheduleTimer, request)).timer)

    async def get(self, namespace: str, id: TimerId) -> Timer:
        """See lawn.Client.get."""
        request = pb.GetTimerRequest(namespace=namespace, id=_convert.timer_id(id))
        return _convert.timer_from((await self._call(self._stub.GetTimer, request)).timer)

    async def list(self, namespace: str, *, page_size: int = 100) -> AsyncIterator[Timer]:
        """See lawn.Client.list: `async for timer in client.list(ns)`, one call per page."""
        token = ""
        while True:
            request = pb.ListTimersRequest(namespace=namespace, page_size=page_size, page_token=token)
            page = await self._call(self._stub.ListTimers, request)
            for t in page.timers:
                yield _convert.timer_from(t)
            token = page.next_page_token
            if not token:
                return

    async def stats(self) -> Stats:
        """See lawn.Client.stats."""
        return _convert.stats_from(await self._call(self._stub.GetStats, pb.GetStatsRequest()))

    def subscribe(self, namespace: str, *, max_in_flight: int = 100, max_batch: int = 1000,
                  observe: bool = False, auto_ack: bool = True, reconnect: bool = True,
                  backoff: Optional[Backoff] = None) -> Subscription:
        """See lawn.Client.subscribe; the stream opens on `async with` or the first `async for` step."""
        return Subscription(self._stub, namespace, metadata=self._metadata, max_in_flight=max_in_flight,
                            max_batch=max_batch, observe=observe, auto_ack=auto_ack, reconnect=reconnect,
                            backoff=backoff)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        await self.close()
        return False
