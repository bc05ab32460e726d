"""An asyncio worker: starts a few timers, handles their expirations as they fire, and stops when done.

Address: the first argument, else $LAWN_ADDR, else the quick-start lawnd (127.0.0.1:7070); token: $LAWN_TOKEN.
An expiration is acked when its `with` block is left without an exception; one whose handler raises is not,
and lawnd delivers it again (at least once).
"""
import asyncio
import os
import sys

import lawn.aio


async def main(address: str) -> None:
    async with lawn.aio.Client(address, token=os.environ.get("LAWN_TOKEN")) as client:
        jobs = {f"job-{n}".encode() for n in range(3)}
        await client.start_many([lawn.TimerSpec("demo-async", job, ttl=0.5, replace=True) for job in jobs],
                                raise_errors=True)
        async with client.subscribe("demo-async", auto_ack=False) as expirations:
            async for exp in expirations:
                with exp:
                    print("handling", exp.timer.id, "attempt", exp.attempt)
                    jobs.discard(exp.timer.id)
                if not jobs:
                    break
    print("all jobs handled")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LAWN_ADDR", "127.0.0.1:7070")))
