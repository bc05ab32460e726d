#!/usr/bin/python3
"""lawn.aio.Client against a real lawnd: the same calls as coroutines, and `async for` subscriptions."""

import asyncio
import unittest

import support
from support import WAIT_S, DroppingProxy, LawndTestCase, wait_until

import lawn
import lawn.aio


async def take(subscription: lawn.aio.Subscription, count: int) -> list:
    """The next `count` expirations, within WAIT_S."""

    async def collect() -> list:
        got = []
        async for exp in subscription:
            got.append(exp)
            if len(got) == count:
                break
        return got

    return await asyncio.wait_for(collect(), WAIT_S)


class AioTest(LawndTestCase, unittest.IsolatedAsyncioTestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.sync = lawn.Client(cls.lawnd.address)  # For waits and checks from outside the loop.
        cls.addClassCleanup(cls.sync.close)
        support.wait_serving(cls.sync)

    async def asyncSetUp(self) -> None:
        self.client = lawn.aio.Client(self.lawnd.address)

    async def asyncTearDown(self) -> None:
        await self.client.close()

    def outbox(self, ns: str) -> int:
        return self.namespace_stats(self.sync, ns).outbox

    async def test_unary_calls_and_their_errors(self):
        t = await self.client.start("py-aio", "a", ttl=60, payload=b"x")
        self.assertEqual((t.id, t.payload), (b"a", b"x"))
        with self.assertRaises(lawn.AlreadyExists):
            await self.client.start("py-aio", "a", ttl=60)
        self.assertEqual((await self.client.get("py-aio", "a")).payload, b"x")
        moved = await self.client.reschedule("py-aio", "a", ttl=120)
        self.assertGreater(moved.deadline, t.deadline)
        self.assertEqual((await self.client.delete("py-aio", "a")).id, b"a")
        with self.assertRaises(lawn.NotFound):
            await self.client.get("py-aio", "a")
        await self.client.start("py-aio", "kept", ttl=60)  # lawnd forgets a namespace with nothing in it.
        self.assertEqual((await self.client.stats()).namespaces["py-aio"].pending_timers, 1)

    async def test_start_many_with_a_bad_item_and_list_over_pages(self):
        specs = [lawn.TimerSpec("py-aio-list", f"l-{i:02d}", ttl=600) for i in range(12)]
        results = await self.client.start_many(specs + [lawn.TimerSpec("py-aio-list", "", ttl=600)])
        self.assertEqual([r.ok for r in results], [True] * 12 + [False])
        self.assertIsInstance(results[-1].error, lawn.InvalidArgument)
        ids = [t.id async for t in self.client.list("py-aio-list", page_size=5)]
        self.assertEqual(ids, [s.id.encode() for s in specs])

    async def test_subscribe_yields_expirations_and_acks_them(self):
        ns = "py-aio-sub"
        async with self.client.subscribe(ns, max_batch=10) as sub:
            await self.client.start_many([lawn.TimerSpec(ns, f"e-{i}", ttl=0.1) for i in range(3)])
            got = await take(sub, 3)
            self.assertEqual(sorted(e.timer.id for e in got), [b"e-0", b"e-1", b"e-2"])
        await asyncio.to_thread(wait_until, lambda: self.outbox(ns) == 0, "the acks")

    async def test_an_unacked_expiration_comes_back_after_a_dropped_connection(self):
        ns = "py-aio-drop"
        proxy = DroppingProxy(self.lawnd.port)
        self.addCleanup(proxy.close)
        async with lawn.aio.Client(f"127.0.0.1:{proxy.port}") as client:
            async with client.subscribe(ns, auto_ack=False, backoff=lawn.Backoff(0.05, 0.5)) as sub:
                await client.start(ns, "held", ttl=0.05)
                first = (await take(sub, 1))[0]
                self.assertGreaterEqual(proxy.drop(), 1)
                again = (await take(sub, 1))[0]
                self.assertEqual((again.timer.id, again.delivery_id, again.attempt),
                                 (b"held", first.delivery_id, 2))
                self.assertGreaterEqual(sub.reconnects, 1)
                with again:
                    pass  # Leaving the block acks.
                await asyncio.to_thread(wait_until, lambda: self.outbox(ns) == 0, "the ack on the new stream")

    async def test_close_from_another_task_ends_the_iteration(self):
        sub = self.client.subscribe("py-aio-close")

        async def iterate() -> int:
            return len([e async for e in sub])

        task = asyncio.create_task(iterate())
        await asyncio.to_thread(wait_until, lambda: self.namespace_stats(self.sync, "py-aio-close").subscribers == 1,
                                "the stream to open")
        await sub.close()
        self.assertEqual(await asyncio.wait_for(task, WAIT_S), 0)

    async def test_closing_the_client_ends_its_subscriptions(self):
        client = lawn.aio.Client(self.lawnd.address)
        sub = client.subscribe("py-aio-client-close")

        async def iterate() -> int:
            return len([e async for e in sub])

        task = asyncio.create_task(iterate())
        await asyncio.to_thread(
            wait_until, lambda: self.namespace_stats(self.sync, "py-aio-client-close").subscribers == 1, "the stream")
        await client.close()
        self.assertEqual(await asyncio.wait_for(task, WAIT_S), 0)


if __name__ == "__main__":
    support.main()
