"""Client: the blocking Python client of lawnd's lawn.v1.TimerService.

Every method makes one call (start_many and list: one per batch or page) with the client's `timeout` as its
deadline, and returns plain values (lawn.types) or raises the LawnError subclass named after lawnd's status
code: AlreadyExists, NotFound, InvalidArgument, ResourceExhausted, Unauthenticated, PermissionDenied,
Unavailable (lawnd unreachable, recovering or draining; calls fail fast rather than wait for a connection).

Thread-safety: one Client may be used from any number of threads; gRPC channels are thread-safe. close() (or
leaving a `with` block) closes the channel, which also ends the client's subscriptions.
"""

from __future__ import annotations

import datetime as dt
from typing import Iterable, Iterator, List, Optional, Union

import grpc

from lawn import _convert
from lawn._stubs import timer_pb2 as pb
from lawn._stubs import timer_pb2_grpc as pb_grpc
from lawn.backoff import Backoff
from lawn.connection import TLS, call_metadata, channel_options, check_token, resolve_tls
from lawn.errors import from_rpc_error
from lawn.subscription import Subscription
from lawn.types import Seconds, StartResult, Stats, Timer, TimerId, TimerSpec

# The quick-start lawnd (README): plaintext on loopback.
DEFAULT_ADDRESS = "127.0.0.1:7070"
# lawnd takes at most this many timers per StartTimers call.
MAX_BATCH = 10_000
# Bytes of items per StartTimers call: well below lawnd's max_message_bytes (4 MiB by default).
MAX_BATCH_BYTES = 1 << 20


class Client:
    """A connection to lawnd at `address` ("host:port", or any gRPC target such as "dns:///lawn:7070").

    token: sent as `authorization: Bearer <token>` on every call (lawnd's auth.tokens_file).
    tls: a lawn.TLS (CA, client certificate and key for mutual TLS, server name), True for TLS with the
    default roots, or None for plaintext. Connects lazily: an unreachable lawnd or a failed TLS handshake
    shows up as Unavailable on the first call.
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, token: Optional[str] = None,
                 tls: Union[TLS, bool, None] = None, *, timeout: Optional[float] = 10.0) -> None:
        check_token(token)
        tls = resolve_tls(tls)
        options = channel_options(tls)
        if tls is None:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            self._channel = grpc.secure_channel(address, tls.credentials(), options=options)
        self._stub = pb_grpc.TimerServiceStub(self._channel)
        self._metadata = call_metadata(token)
        self._timeout = timeout
        self.address = address

    def _call(self, method, request):
        try:
            return method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def start(self, namespace: str, id: TimerId, *, ttl: Optional[Seconds] = None,
              deadline: Optional[dt.datetime] = None, payload: bytes = b"", interval: Optional[Seconds] = None,
              replace: bool = False) -> Timer:
        """Starts a timer firing after `ttl` (timedelta or seconds) or at `deadline` (aware datetime).

        interval makes it recurring (re-armed at previous deadline + interval). AlreadyExists if the id is
        pending and replace is False; InvalidArgument for a bad namespace, id, ttl, deadline or payload.
        """
        spec = TimerSpec(namespace, id, ttl=ttl, deadline=deadline, payload=payload, interval=interval,
                         replace=replace)
        return _convert.timer_from(self._call(self._stub.StartTimer, _convert.start_request(spec)).timer)

    def start_many(self, specs: Iterable[TimerSpec], *, return_timers: bool = False,
                   raise_errors: bool = False, batch_size: int = MAX_BATCH,
                   batch_bytes: int = MAX_BATCH_BYTES) -> List[StartResult]:
        """Starts many timers in StartTimers calls of up to `batch_size` of them and about `batch_bytes`
        bytes (a single larger item goes alone); each succeeds or fails alone.

        Returns a StartResult per spec, in order: read `.error` as a value, or call `.result()` to raise it.
        raise_errors=True instead raises the first failed item's LawnError (after every batch was sent),
        with all results in its `results` attribute. return_timers=True asks lawnd for each started timer
        (`.timer`); by default lawnd sends codes only. A failure of a whole call (Unavailable, ...) raises.
        """
        specs = list(specs)
        if not 1 <= batch_size <= MAX_BATCH or batch_bytes < 1:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH} and batch_bytes positive")
        results: List[StartResult] = []
        for batch, request in _convert.start_batches(specs, batch_size, batch_bytes, return_timers):
            results += _convert.start_results(batch, self._call(self._stub.StartTimers, request))
        return _convert.raise_first_error(results) if raise_errors else results

    def delete(self, namespace: str, id: TimerId) -> Timer:
        """Deletes a pending timer and returns it. NotFound if there is none."""
        request = pb.DeleteTimerRequest(namespace=namespace, id=_convert.timer_id(id))
        return _convert.timer_from(self._call(self._stub.DeleteTimer, request).timer)

    def reschedule(self, namespace: str, id: TimerId, *, ttl: Optional[Seconds] = None,
                   deadline: Optional[dt.datetime] = None) -> Timer:
        """Moves a pending timer to now + ttl or to deadline; keeps payload and interval. NotFound if none."""
        request = _convert.reschedule_request(namespace, id, ttl, deadline)
        return _convert.timer_from(self._call(self._stub.RescheduleTimer, request).timer)

    def get(self, namespace: str, id: TimerId) -> Timer:
        """Reads a pending timer. NotFound if there is none (also once it has fired)."""
        request = pb.GetTimerRequest(namespace=namespace, id=_convert.timer_id(id))
        return _convert.timer_from(self._call(self._stub.GetTimer, request).timer)

    def list(self, namespace: str, *, page_size: int = 100) -> Iterator[Timer]:
        """Every pending timer of the namespace in id order, fetched lazily one page (1..1000) per call."""
        token = ""
        while True:
            request = pb.ListTimersRequest(namespace=namespace, page_size=page_size, page_token=token)
            page = self._call(self._stub.ListTimers, request)
            for t in page.timers:
                yield _convert.timer_from(t)
            token = page.next_page_token
            if not token:
                return

    def stats(self) -> Stats:
        """Pending timers and outbox per namespace the caller may read (and per shard, for admin tokens)."""
        return _convert.stats_from(self._call(self._stub.GetStats, pb.GetStatsRequest()))

    def subscribe(self, namespace: str, *, max_in_flight: int = 100, max_batch: int = 1000,
                  observe: bool = False, auto_ack: bool = True, reconnect: bool = True,
                  backoff: Optional[Backoff] = None) -> Subscription:
        """An iterator of the namespace's expirations; see lawn.subscription for acks and reconnects.

        max_in_flight: unacked expirations lawnd may hand this stream at once (0: lawnd's default, 100).
        max_batch: expirations per message (lawnd caps it at 1000 and, unless observing, at half of
        max_in_flight); 0 for one per message.
        observe: a best-effort copy of every expiration, without acks and without taking work from others.
        auto_ack: ack each expiration when the next one is asked for (and the last one when the `with`
        block is left cleanly). reconnect: open a new stream, after a backoff, when one breaks.
        """
        return Subscription(self._stub, namespace, metadata=self._metadata, max_in_flight=max_in_flight,
                            max_batch=max_batch, observe=observe, auto_ack=auto_ack, reconnect=reconnect,
                            backoff=backoff)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False

