#!/usr/bin/python3
"""lawn.Subscription against a real lawnd: acks, batches, observe mode, redelivery, reconnects, close."""

import threading

import support
from support import WAIT_S, DroppingProxy, LawndTestCase, take, wait_until

import lawn


class SubscribeTest(LawndTestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.client = lawn.Client(cls.lawnd.address)
        cls.addClassCleanup(cls.client.close)
        support.wait_serving(cls.client)

    def outbox(self, ns: str) -> int:
        return self.namespace_stats(self.client, ns).outbox

    def fire(self, ns: str, *ids: str, payload: bytes = b"") -> None:
        """Starts timers that are due at once and waits until they sit in the outbox."""
        before = self.outbox(ns)
        self.client.start_many([lawn.TimerSpec(ns, i, ttl=0.001, payload=payload) for i in ids], raise_errors=True)
        wait_until(lambda: self.outbox(ns) == before + len(ids), f"{ids} to fire")

    def test_expirations_are_yielded_and_auto_acked_when_the_loop_moves_on(self):
        ns = "py-sub-auto"
        with self.client.subscribe(ns) as sub:
            self.client.start(ns, "e-1", ttl=0.2, payload=b"ring")
            self.client.start(ns, "e-2", ttl=0.2)
            got = take(sub, 2)
            self.assertEqual(sorted(e.timer.id for e in got), [b"e-1", b"e-2"])
            first = [e for e in got if e.timer.id == b"e-1"][0]
            self.assertEqual((first.timer.payload, first.attempt, first.late), (b"ring", 1, False))
            self.assertGreaterEqual(first.fired_at, first.timer.deadline)
            self.assertTrue(got[0].acked)  # Asking for the second acked the first.
        # Leaving the block cleanly acked the last one.
        wait_until(lambda: self.outbox(ns) == 0, "the acks to empty the outbox")

    def test_batched_and_unbatched_streams_deliver_everything_and_acks_go_together(self):
        for max_batch in (10, 0):
            ns = f"py-sub-batch-{max_batch}"
            ids = [f"b-{i}" for i in range(5)]
            self.fire(ns, *ids)
            with self.client.subscribe(ns, max_batch=max_batch, max_in_flight=10, auto_ack=False) as sub:
                got = take(sub, 5)
                self.assertEqual(sorted(e.timer.id for e in got), sorted(i.encode() for i in ids))
                for e in got:
                    e.ack()
                wait_until(lambda: self.outbox(ns) == 0, f"max_batch {max_batch}: the acks to arrive")

    def test_leaving_an_expirations_with_block_acks_and_an_exception_leaves_it_for_redelivery(self):
        ns = "py-sub-with"
        self.fire(ns, "ok", "fails")
        failed = None
        with self.client.subscribe(ns, auto_ack=False) as sub:
            for exp in take(sub, 2):
                try:
                    with exp:
                        if exp.timer.id == b"fails":
                            failed = exp
                            raise RuntimeError("handler failed")
                except RuntimeError:
                    pass
            self.assertFalse(failed.acked)
            wait_until(lambda: self.outbox(ns) == 1, "the good one's ack")
        # Its stream ended: lawnd delivers the unacked one again, same delivery, next attempt.
        with self.client.subscribe(ns) as sub:
            again = take(sub, 1)[0]
            self.assertEqual(again.timer.id, b"fails")
            self.assertEqual(again.delivery_id, failed.delivery_id)
            self.assertEqual(again.attempt, 2)
        wait_until(lambda: self.outbox(ns) == 0, "the redelivery's ack")

    def test_a_dropped_connection_reconnects_and_gets_the_unacked_expiration_again(self):
        ns = "py-sub-drop"
        proxy = DroppingProxy(self.lawnd.port)
        self.addCleanup(proxy.close)
        fast = lawn.Backoff(initial=0.05, maximum=0.5)
        with lawn.Client(f"127.0.0.1:{proxy.port}") as client:
            with client.subscribe(ns, auto_ack=False, backoff=fast) as sub:
                self.fire(ns, "held")
                first = take(sub, 1)[0]
                self.assertGreaterEqual(proxy.drop(), 1)
                again = take(sub, 1)[0]
                self.assertGreaterEqual(sub.reconnects, 1)
                self.assertEqual((again.timer.id, again.delivery_id), (b"held", first.delivery_id))
                self.assertEqual(again.attempt, 2)
                first.ack()  # An ack for the dead stream: ignored, harmless.
                again.ack()
                wait_until(lambda: self.outbox(ns) == 0, "the ack on the new stream")

    def test_an_observer_gets_a_copy_without_acks_while_a_worker_takes_the_work(self):
        ns = "py-sub-observe"
        with self.client.subscribe(ns, observe=True) as observer, self.client.subscribe(ns) as worker:
            wait_until(lambda: self.namespace_stats(self.client, ns).subscribers == 2, "both streams to open")
            self.client.start(ns, "o", ttl=0.05, payload=b"copy")
            seen = take(observer, 1)[0]
            self.assertEqual((seen.timer.id, seen.timer.payload), (b"o", b"copy"))
            self.assertTrue(seen.acked)  # Nothing to ack in observe mode.
            self.assertEqual(take(worker, 1)[0].timer.id, b"o")
        wait_until(lambda: self.outbox(ns) == 0, "the worker's ack")

    def test_close_from_another_thread_ends_a_blocked_iteration(self):
        sub = self.client.subscribe("py-sub-close")
        ended = threading.Event()

        def iterate() -> None:
            for _ in sub:
                pass
            ended.set()

        threading.Thread(target=iterate, daemon=True).start()
        wait_until(lambda: self.namespace_stats(self.client, "py-sub-close").subscribers == 1, "the stream")
        sub.close()
        self.assertTrue(ended.wait(WAIT_S), "the iteration did not end after close()")

    def test_closing_the_client_ends_its_subscriptions(self):
        client = lawn.Client(self.lawnd.address)
        sub = client.subscribe("py-sub-client-close")
        ended = threading.Event()

        def iterate() -> None:
            for _ in sub:
                pass
            ended.set()

        threading.Thread(target=iterate, daemon=True).start()
        wait_until(lambda: self.namespace_stats(self.client, "py-sub-client-close").subscribers == 1, "the stream")
        client.close()
        self.assertTrue(ended.wait(WAIT_S), "the iteration did not end after the client closed")

    def test_a_bad_namespace_ends_the_subscription_with_invalid_argument(self):
        with self.client.subscribe("Bad Namespace!") as sub:
            with self.assertRaises(lawn.InvalidArgument):
                next(sub)
            with self.assertRaises(StopIteration):
                next(sub)


class RestartTest(LawndTestCase):
    """lawnd stops and comes back on the same port with the same data: the subscription reconnects."""

    def test_a_subscription_survives_a_lawnd_restart_and_gets_what_was_unacked(self):
        ns = "py-restart"
        client = lawn.Client(self.lawnd.address)
        self.addCleanup(client.close)
        support.wait_serving(client)
        with client.subscribe(ns, auto_ack=False, backoff=lawn.Backoff(initial=0.05, maximum=0.5)) as sub:
            client.start(ns, "before", ttl=0.05)
            held = take(sub, 1)[0]
            self.assertEqual(held.timer.id, b"before")
            client.start(ns, "after", ttl=3)  # Due while lawnd is down or after it is back.
            self.lawnd.stop()
            self.lawnd.start()
            got = {}
            while len(got) < 2:
                exp = take(sub, 1)[0]
                got[exp.timer.id] = exp
                exp.ack()
            self.assertEqual(set(got), {b"before", b"after"})
            self.assertGreaterEqual(sub.reconnects, 1)
        support.wait_serving(client)
        wait_until(lambda: self.namespace_stats(client, ns).outbox == 0, "the acks after the restart")


if __name__ == "__main__":
    support.main()
