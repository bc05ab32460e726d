"""lawn.aio: the asyncio flavour of the lawn client, over grpc.aio.

Same methods as lawn.Client, as coroutines; list() is an async iterator and subscribe() returns a
Subscription used with `async with` / `async for`. Expirations, errors and values are lawn's own.

    async with lawn.aio.Client("127.0.0.1:7070") as client:
        await client.start("billing", "invoice-42", ttl=30)
        async with client.subscribe("billing") as expirations:
            async for exp in expirations:
                print(exp.timer.id)
"""

from lawn.aio.client import Client
from lawn.aio.subscription import Subscription

__all__ = ["Client", "Subscription"]
