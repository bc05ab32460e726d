#!/usr/bin/python3
"""lawn.Client's unary calls against a real lawnd: values in, values out, errors as named exceptions."""

import datetime as dt

import support
from support import LawndTestCase

import lawn


class ClientTest(LawndTestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.client = lawn.Client(cls.lawnd.address)
        cls.addClassCleanup(cls.client.close)
        support.wait_serving(cls.client)

    def test_start_returns_the_timer_with_deadline_now_plus_ttl(self):
        before = dt.datetime.now(dt.timezone.utc)
        t = self.client.start("py-start", "s-1", ttl=60, payload=b"hello")
        after = dt.datetime.now(dt.timezone.utc)
        self.assertEqual((t.namespace, t.id, t.payload, t.interval), ("py-start", b"s-1", b"hello", None))
        self.assertEqual(t.ttl, dt.timedelta(seconds=60))
        slack = dt.timedelta(milliseconds=50)  # lawnd reads its own clock.
        self.assertTrue(before + t.ttl - slack <= t.deadline <= after + t.ttl + slack, t.deadline)

    def test_start_at_a_deadline_with_an_interval_is_read_back_as_given(self):
        deadline = dt.datetime(2100, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
        self.client.start("py-start", b"\x00bin", deadline=deadline, interval=dt.timedelta(hours=1))
        got = self.client.get("py-start", b"\x00bin")
        self.assertEqual(got.deadline, deadline)
        self.assertEqual(got.interval, dt.timedelta(hours=1))

    def test_a_naive_deadline_or_both_ttl_and_deadline_are_refused_before_any_call(self):
        with self.assertRaises(ValueError):
            self.client.start("py-start", "naive", deadline=dt.datetime(2100, 1, 1))
        with self.assertRaises(ValueError):
            self.client.start("py-start", "both", ttl=1, deadline=dt.datetime.now(dt.timezone.utc))

    def test_duplicate_id_raises_already_exists_and_replace_overwrites(self):
        self.client.start("py-dup", "d", ttl=60, payload=b"old")
        with self.assertRaises(lawn.AlreadyExists) as caught:
            self.client.start("py-dup", "d", ttl=60)
        self.assertIsInstance(caught.exception, lawn.LawnError)
        self.assertEqual(caught.exception.code.name, "ALREADY_EXISTS")
        self.assertIn("already exists", caught.exception.message)
        self.client.start("py-dup", "d", ttl=120, payload=b"new", replace=True)
        self.assertEqual(self.client.get("py-dup", "d").payload, b"new")

    def test_bad_input_raises_invalid_argument_naming_the_field(self):
        with self.assertRaises(lawn.InvalidArgument) as caught:
            self.client.start("Not Valid!", "x", ttl=60)
        self.assertIn("namespace", caught.exception.message)

    def test_delete_returns_the_timer_and_then_it_is_not_found(self):
        self.client.start("py-delete", "d", ttl=60, payload=b"bye")
        self.assertEqual(self.client.delete("py-delete", "d").payload, b"bye")
        with self.assertRaises(lawn.NotFound):
            self.client.get("py-delete", "d")
        with self.assertRaises(lawn.NotFound):
            self.client.delete("py-delete", "d")

    def test_reschedule_moves_the_deadline_and_keeps_the_payload(self):
        first = self.client.start("py-resched", "r", ttl=60, payload=b"keep")
        moved = self.client.reschedule("py-resched", "r", ttl=dt.timedelta(hours=2))
        self.assertGreater(moved.deadline, first.deadline)
        self.assertEqual(self.client.get("py-resched", "r").payload, b"keep")
        later = dt.datetime(2100, 6, 1, tzinfo=dt.timezone.utc)
        self.assertEqual(self.client.reschedule("py-resched", "r", deadline=later).deadline, later)
        with self.assertRaises(lawn.NotFound):
            self.client.reschedule("py-resched", "missing", ttl=1)

    def test_list_yields_every_timer_across_pages_in_id_order(self):
        ids = [b"l-%02d" % i for i in range(25)]
        self.client.start_many([lawn.TimerSpec("py-list", i, ttl=600) for i in reversed(ids)], raise_errors=True)
        self.assertEqual([t.id for t in self.client.list("py-list", page_size=10)], ids)
        self.assertEqual(list(self.client.list("py-list-empty")), [])

    def test_start_many_splits_calls_by_count_and_by_bytes(self):
        # 10,005 items of 500-byte payloads: more than one call's 10,000 items and than lawnd's 4 MiB message.
        specs = [lawn.TimerSpec("py-many", "m-%05d" % i, ttl=600, payload=b"x" * 500) for i in range(10_005)]
        results = self.client.start_many(specs)
        self.assertTrue(all(r.ok for r in results), next((r.error for r in results if not r.ok), None))
        self.assertEqual(self.client.stats().namespaces["py-many"].pending_timers, 10_005)

    def test_start_many_returns_a_result_per_item_with_bad_items_as_values(self):
        specs = [lawn.TimerSpec("py-batch", "ok-1", ttl=60), lawn.TimerSpec("py-batch", "", ttl=60),
                 lawn.TimerSpec("py-batch", "ok-2", ttl=60, payload=b"p"), lawn.TimerSpec("py-batch", "ok-1", ttl=60)]
        results = self.client.start_many(specs, return_timers=True)
        self.assertEqual([r.ok for r in results], [True, False, True, False])
        self.assertIsInstance(results[1].error, lawn.InvalidArgument)
        self.assertIsInstance(results[3].error, lawn.AlreadyExists)
        self.assertEqual(results[2].timer.payload, b"p")
        self.assertEqual(results[0].result().id, b"ok-1")
        with self.assertRaises(lawn.AlreadyExists):
            results[3].result()
        self.assertEqual(self.client.get("py-batch", "ok-2").payload, b"p")

    def test_start_many_can_raise_the_first_bad_item_after_starting_the_rest(self):
        specs = [lawn.TimerSpec("py-batch-raise", "a", ttl=60), lawn.TimerSpec("py-batch-raise", "a", ttl=60),
                 lawn.TimerSpec("py-batch-raise", "c", ttl=60)]
        with self.assertRaises(lawn.AlreadyExists) as caught:
            self.client.start_many(specs, raise_errors=True, batch_size=2)  # Two StartTimers calls.
        self.assertIn("item 1", caught.exception.message)
        self.assertEqual([r.ok for r in caught.exception.results], [True, False, True])
        self.assertEqual(self.client.get("py-batch-raise", "c").id, b"c")

    def test_stats_counts_the_namespace_timers(self):
        self.client.start("py-stats", "a", ttl=60)
        self.client.start("py-stats", "b", ttl=60)
        stats = self.client.stats()
        self.assertEqual(stats.namespaces["py-stats"].pending_timers, 2)
        self.assertEqual(sorted(s.shard for s in stats.shards), [0, 1])

    def test_an_unreachable_lawnd_is_unavailable(self):
        with lawn.Client("127.0.0.1:1", timeout=5) as dead:
            with self.assertRaises(lawn.Unavailable):
                dead.stats()


if __name__ == "__main__":
    support.main()
