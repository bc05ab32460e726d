#!/usr/bin/python3
"""Cross-language interop test: drives a real lawnd from Python (Debian's grpcio and protobuf).

The point is that proto/lawn/v1/timer.proto stays usable from a client that is not ours: the Python stubs
are generated at test time by protoc and Debian's grpc_python_plugin from the proto files, nothing is
shared with the C++ client. Health and reflection stubs are generated the same way from Debian's
grpc-proto files (python3-grpcio ships neither grpc_health nor grpc_reflection).

Usage: /usr/bin/python3 interop_test.py --lawnd PATH --proto-dir DIR [unittest args...]

Each test class starts its own lawnd on 127.0.0.1 port 0 in a tempfile.mkdtemp directory and stops it with
SIGTERM (expecting exit status 0); tests in a class share that lawnd, so each uses its own namespace.
SecurityTest runs its lawnd with TLS (throw-away certificates from tests/testing/make_certs.sh, made with
openssl at test time) and a tokens file, and talks to it through grpc.ssl_channel_credentials.
"""

import argparse
import hashlib
import importlib
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
from google.protobuf import descriptor_pb2

# Set by main() from the command line.
ARGS = None

# Generated modules, imported by setUpModule once protoc has run.
timer_pb2 = None
timer_pb2_grpc = None
health_pb2 = None
health_pb2_grpc = None
reflection_pb2 = None
reflection_pb2_grpc = None

_GEN_DIR = None

RPC_TIMEOUT_S = 10  # Deadline of each unary call.
STARTUP_TIMEOUT_S = 30  # From spawning lawnd to SERVING.
STOP_TIMEOUT_S = 30  # From SIGTERM to exit.
CLOCK_SLACK_NS = 50_000_000  # "About now + ttl": the server reads its own clock.


def _generate_stubs(out_dir):
    """Runs protoc + grpc_python_plugin into out_dir; returns nothing, raises on failure."""
    grpc_proto = ARGS.grpc_proto_dir
    # The health and reflection protos are compiled with -I <grpc-proto>/grpc, so their modules are
    # health.v1.* and reflection.v1alpha.*: a generated top-level "grpc" package would shadow grpcio.
    # File names inside the descriptors change accordingly; the wire names (package grpc.health.v1,
    # grpc.reflection.v1alpha) do not.
    jobs = [
        ([ARGS.proto_dir], os.path.join(ARGS.proto_dir, "lawn/v1/timer.proto")),
        ([os.path.join(grpc_proto, "grpc")], os.path.join(grpc_proto, "grpc/health/v1/health.proto")),
        ([os.path.join(grpc_proto, "grpc")], os.path.join(grpc_proto, "grpc/reflection/v1alpha/reflection.proto")),
    ]
    for includes, proto in jobs:
        cmd = [ARGS.protoc]
        for inc in includes:
            cmd.append("-I" + inc)
        cmd += [
            "--python_out=" + out_dir,
            "--grpc_python_out=" + out_dir,
            "--plugin=protoc-gen-grpc_python=" + ARGS.grpc_python_plugin,
            proto,
        ]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError("protoc failed (%d): %s\n%s" % (done.returncode, " ".join(cmd),
                                                               done.stdout.decode(errors="replace")))
    # Regular packages (with __init__.py) so an unrelated installed "lawn" or "health" cannot win the import.
    for root, _, _ in os.walk(out_dir):
        if root != out_dir:
            open(os.path.join(root, "__init__.py"), "a").close()


def setUpModule():
    global _GEN_DIR, timer_pb2, timer_pb2_grpc, health_pb2, health_pb2_grpc, reflection_pb2, reflection_pb2_grpc
    _GEN_DIR = tempfile.mkdtemp(prefix="lawn-pystubs-")
    unittest.addModuleCleanup(shutil.rmtree, _GEN_DIR, ignore_errors=True)
    _generate_stubs(_GEN_DIR)
    sys.path.insert(0, _GEN_DIR)
    timer_pb2 = importlib.import_module("lawn.v1.timer_pb2")
    timer_pb2_grpc = importlib.import_module("lawn.v1.timer_pb2_grpc")
    health_pb2 = importlib.import_module("health.v1.health_pb2")
    health_pb2_grpc = importlib.import_module("health.v1.health_pb2_grpc")
    reflection_pb2 = importlib.import_module("reflection.v1alpha.reflection_pb2")
    reflection_pb2_grpc = importlib.import_module("reflection.v1alpha.reflection_pb2_grpc")


class Lawnd:
    """One lawnd child process: spawned on port 0, its merged stdout/stderr collected by a reader thread."""

    _LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")

    def __init__(self, lawnd_path, data_dir, extra_args=()):
        self._lines = []
        self._lock = threading.Lock()
        self._port_found = threading.Event()
        self.port = None
        self.proc = subprocess.Popen(
            [lawnd_path, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--metrics-listen", "",
             "--shards", "2"] + list(extra_args),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            with self._lock:
                self._lines.append(line)
            if self.port is None:
                m = self._LISTENING.search(line)
                if m:
                    self.port = int(m.group(1))
                    self._port_found.set()
        self._port_found.set()  # EOF: lawnd exited; wake the waiter so it can report that.

    def log(self):
        with self._lock:
            return "".join(self._lines)

    def wait_port(self, timeout_s):
        """Returns the port lawnd logged, or raises with its log."""
        self._port_found.wait(timeout_s)
        if self.port is None:
            raise RuntimeError("lawnd did not report its port (exit status %s); log:\n%s"
                               % (self.proc.poll(), self.log()))
        return self.port

    def stop(self):
        """SIGTERM to this process only; raises unless it exits 0 within STOP_TIMEOUT_S."""
        exited_early = self.proc.poll() is not None
        if not exited_early:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("lawnd ignored SIGTERM for %d s; log:\n%s" % (STOP_TIMEOUT_S, self.log()))
        self._reader.join(timeout=5)
        if exited_early:
            raise RuntimeError("lawnd exited on its own with status %d; log:\n%s"
                               % (self.proc.returncode, self.log()))
        if self.proc.returncode != 0:
            raise RuntimeError("lawnd exited with status %d after SIGTERM; log:\n%s"
                               % (self.proc.returncode, self.log()))


class _RequestQueue:
    """A request iterator for a client stream: put() messages, close() to half-close."""

    _END = object()

    def __init__(self):
        self._q = queue.Queue()

    def put(self, message):
        self._q.put(message)

    def close(self):
        self._q.put(self._END)

    def __iter__(self):
        return self

    def __next__(self):
        item = self._q.get()
        if item is self._END:
            raise StopIteration
        return item


class LawndTestCase(unittest.TestCase):
    """Starts one lawnd per class (SERVING before any test runs) and opens a channel to it."""

    @classmethod
    def lawnd_args(cls):
        """Extra lawnd flags; called once cls.tmp exists, so a subclass may write files there."""
        return []

    @classmethod
    def open_channel(cls, port):
        return grpc.insecure_channel("127.0.0.1:%d" % port)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lawn-pyinterop-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.lawnd = Lawnd(ARGS.lawnd, os.path.join(cls.tmp, "data"), cls.lawnd_args())
        cls.addClassCleanup(cls.lawnd.stop)
        port = cls.lawnd.wait_port(STARTUP_TIMEOUT_S)
        cls.channel = cls.open_channel(port)
        cls.addClassCleanup(cls.channel.close)
        cls.stub = timer_pb2_grpc.TimerServiceStub(cls.channel)
        cls._wait_serving()

    @classmethod
    def _wait_serving(cls):
        # Health.Watch streams each status change: await SERVING rather than polling Check.
        health = health_pb2_grpc.HealthStub(cls.channel)
        watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=STARTUP_TIMEOUT_S,
                             wait_for_ready=True)
        try:
            for response in watch:
                if response.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError as e:
            raise RuntimeError("lawnd never became SERVING (%s); log:\n%s" % (e, cls.lawnd.log())) from e
        finally:
            watch.cancel()
        raise RuntimeError("Health.Watch ended before SERVING; log:\n" + cls.lawnd.log())

    # ---- helpers ----------------------------------------------------------------------------------------

    def start_ttl(self, ns, timer_id, ttl_ms, payload=b"", replace=False):
        req = timer_pb2.StartTimerRequest(namespace=ns, id=timer_id, payload=payload, replace=replace)
        req.ttl.FromMilliseconds(ttl_ms)
        return self.stub.StartTimer(req, timeout=RPC_TIMEOUT_S).timer

    def assert_rpc_error(self, code, call, *args, **kwargs):
        """Runs call(*args, **kwargs), asserts it fails with `code`, returns the grpc.RpcError."""
        with self.assertRaises(grpc.RpcError) as caught:
            call(*args, timeout=RPC_TIMEOUT_S, **kwargs)
        self.assertEqual(caught.exception.code(), code, caught.exception.details())
        return caught.exception

    def namespace_stats(self, ns):
        stats = self.stub.GetStats(timer_pb2.GetStatsRequest(), timeout=RPC_TIMEOUT_S)
        for n in stats.namespaces:
            if n.namespace == ns:
                return n
        return None

    def wait_until(self, predicate, timeout_s, what):
        """Polls predicate() (an RPC each time, nothing to await) until true; fails after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            if predicate():
                return
            if time.monotonic() >= deadline:
                self.fail("timed out after %.1f s waiting for %s" % (timeout_s, what))
            time.sleep(0.02)


class HealthAndReflectionTest(LawndTestCase):

    def test_health_check_reports_serving(self):
        health = health_pb2_grpc.HealthStub(self.channel)
        response = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=RPC_TIMEOUT_S)
        self.assertEqual(response.status, health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_lists_the_timer_service(self):
        reflection = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        responses = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=RPC_TIMEOUT_S)
        first = next(responses)
        names = [s.name for s in first.list_services_response.service]
        self.assertIn("lawn.v1.TimerService", names)

    def test_reflection_serves_the_timer_proto_descriptor(self):
        reflection = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        responses = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(file_containing_symbol="lawn.v1.TimerService")]),
            timeout=RPC_TIMEOUT_S)
        first = next(responses)
        files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                 for b in first.file_descriptor_response.file_descriptor_proto]
        timer_file = [f for f in files if f.name == "lawn/v1/timer.proto"]
        self.assertEqual(len(timer_file), 1, [f.name for f in files])
        service = [s for s in timer_file[0].service if s.name == "TimerService"][0]
        # The server's descriptor matches the one our Python stubs were generated from.
        local = timer_pb2.DESCRIPTOR.services_by_name["TimerService"]
        self.assertEqual(sorted(m.name for m in service.method), sorted(local.methods_by_name))


class TimerServiceTest(LawndTestCase):

    def test_start_timer_returns_the_timer_with_deadline_now_plus_ttl(self):
        before = time.time_ns()
        t = self.start_ttl("py-start", b"s-1", 60_000, payload=b"hello")
        after = time.time_ns()
        self.assertEqual(t.namespace, "py-start")
        self.assertEqual(t.id, b"s-1")
        self.assertEqual(t.payload, b"hello")
        self.assertEqual(t.ttl.ToMilliseconds(), 60_000)
        self.assertFalse(t.HasField("interval"))
        deadline = t.deadline.ToNanoseconds()
        self.assertGreaterEqual(deadline, before + 60_000_000_000 - CLOCK_SLACK_NS)
        self.assertLessEqual(deadline, after + 60_000_000_000 + CLOCK_SLACK_NS)

    def test_empty_namespace_means_default(self):
        t = self.start_ttl("", b"py-default-ns", 60_000)
        self.assertEqual(t.namespace, "default")

    def test_duplicate_id_is_already_exists(self):
        self.start_ttl("py-dup", b"d", 60_000)
        req = timer_pb2.StartTimerRequest(namespace="py-dup", id=b"d")
        req.ttl.FromSeconds(60)
        self.assert_rpc_error(grpc.StatusCode.ALREADY_EXISTS, self.stub.StartTimer, req)

    def test_replace_overwrites_an_existing_timer(self):
        self.start_ttl("py-replace", b"r", 60_000, payload=b"old")
        t = self.start_ttl("py-replace", b"r", 120_000, payload=b"new", replace=True)
        self.assertEqual(t.payload, b"new")
        self.assertEqual(t.ttl.ToSeconds(), 120)
        got = self.stub.GetTimer(timer_pb2.GetTimerRequest(namespace="py-replace", id=b"r"),
                                 timeout=RPC_TIMEOUT_S).timer
        self.assertEqual(got.payload, b"new")

    def test_empty_id_is_invalid_argument_naming_the_id(self):
        req = timer_pb2.StartTimerRequest(namespace="py-bad", id=b"")
        req.ttl.FromSeconds(60)
        err = self.assert_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, self.stub.StartTimer, req)
        self.assertIn("id", err.details())

    def test_bad_namespace_is_invalid_argument_naming_the_namespace(self):
        req = timer_pb2.StartTimerRequest(namespace="Not Valid!", id=b"x")
        req.ttl.FromSeconds(60)
        err = self.assert_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, self.stub.StartTimer, req)
        self.assertIn("namespace", err.details())

    def test_start_timers_reports_each_item_in_order(self):
        req = timer_pb2.StartTimersRequest(return_timers=True)
        for timer_id in (b"ok-1", b"", b"ok-2", b"ok-1"):  # item 1: bad id; item 3: duplicate of item 0
            item = req.timers.add(namespace="py-batch", id=timer_id)
            item.ttl.FromSeconds(60)
        results = self.stub.StartTimers(req, timeout=RPC_TIMEOUT_S).results
        self.assertEqual(len(results), 4)
        self.assertEqual(results[0].code, grpc.StatusCode.OK.value[0])
        self.assertEqual(results[0].timer.id, b"ok-1")
        self.assertEqual(results[1].code, grpc.StatusCode.INVALID_ARGUMENT.value[0])
        self.assertIn("timers[1].id", results[1].message)
        self.assertEqual(results[2].code, grpc.StatusCode.OK.value[0])
        self.assertEqual(results[2].timer.id, b"ok-2")
        self.assertEqual(results[3].code, grpc.StatusCode.ALREADY_EXISTS.value[0])

    def test_start_timers_answers_codes_only_by_default(self):
        req = timer_pb2.StartTimersRequest()
        for timer_id in (b"c-1", b""):  # item 1: bad id
            req.timers.add(namespace="py-codes", id=timer_id, payload=b"p").ttl.FromSeconds(60)
        results = self.stub.StartTimers(req, timeout=RPC_TIMEOUT_S).results
        self.assertEqual([r.code for r in results], [0, grpc.StatusCode.INVALID_ARGUMENT.value[0]])
        self.assertFalse(results[0].HasField("timer"))
        self.assertFalse(results[1].HasField("timer"))
        got = self.stub.GetTimer(timer_pb2.GetTimerRequest(namespace="py-codes", id=b"c-1"),
                                 timeout=RPC_TIMEOUT_S).timer
        self.assertEqual(got.payload, b"p")

    def test_get_timer_finds_a_pending_timer(self):
        self.start_ttl("py-get", b"g", 60_000, payload=b"p")
        t = self.stub.GetTimer(timer_pb2.GetTimerRequest(namespace="py-get", id=b"g"), timeout=RPC_TIMEOUT_S).timer
        self.assertEqual(t.id, b"g")
        self.assertEqual(t.payload, b"p")

    def test_get_timer_of_a_missing_id_is_not_found(self):
        self.assert_rpc_error(grpc.StatusCode.NOT_FOUND, self.stub.GetTimer,
                              timer_pb2.GetTimerRequest(namespace="py-get", id=b"missing"))

    def test_reschedule_moves_the_deadline(self):
        self.start_ttl("py-resched", b"r", 60_000)
        req = timer_pb2.RescheduleTimerRequest(namespace="py-resched", id=b"r")
        req.ttl.FromSeconds(3600)
        before = time.time_ns()
        t = self.stub.RescheduleTimer(req, timeout=RPC_TIMEOUT_S).timer
        self.assertGreaterEqual(t.deadline.ToNanoseconds(), before + 3600_000_000_000 - CLOCK_SLACK_NS)
        got = self.stub.GetTimer(timer_pb2.GetTimerRequest(namespace="py-resched", id=b"r"),
                                 timeout=RPC_TIMEOUT_S).timer
        self.assertEqual(got.deadline, t.deadline)

    def test_reschedule_of_a_missing_id_is_not_found(self):
        req = timer_pb2.RescheduleTimerRequest(namespace="py-resched", id=b"missing")
        req.ttl.FromSeconds(60)
        self.assert_rpc_error(grpc.StatusCode.NOT_FOUND, self.stub.RescheduleTimer, req)

    def test_list_timers_pages_through_a_namespace_in_id_order(self):
        req = timer_pb2.StartTimersRequest()
        expected = [b"id-%d" % (100 + i) for i in range(25)]
        for timer_id in reversed(expected):
            req.timers.add(namespace="py-list", id=timer_id).ttl.FromSeconds(60)
        req.timers.add(namespace="py-list-other", id=b"id-x").ttl.FromSeconds(60)
        results = self.stub.StartTimers(req, timeout=RPC_TIMEOUT_S).results
        self.assertEqual([r.code for r in results], [0] * 26)
        seen, page_sizes, token = [], [], ""
        while True:
            page = self.stub.ListTimers(timer_pb2.ListTimersRequest(namespace="py-list", page_size=10,
                                                                    page_token=token), timeout=RPC_TIMEOUT_S)
            seen += [t.id for t in page.timers]
            page_sizes.append(len(page.timers))
            token = page.next_page_token
            if not token:
                break
            self.assertLess(len(page_sizes), 10, "ListTimers keeps returning a next_page_token")
        self.assertEqual(seen, expected)
        self.assertEqual(page_sizes, [10, 10, 5])

    def test_list_timers_rejects_a_forged_page_token(self):
        err = self.assert_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, self.stub.ListTimers,
                                    timer_pb2.ListTimersRequest(namespace="py-list", page_token="zz"))
        self.assertIn("page_token", err.details())

    def test_delete_timer_returns_it_and_then_it_is_gone(self):
        self.start_ttl("py-delete", b"d", 60_000, payload=b"bye")
        key = dict(namespace="py-delete", id=b"d")
        t = self.stub.DeleteTimer(timer_pb2.DeleteTimerRequest(**key), timeout=RPC_TIMEOUT_S).timer
        self.assertEqual(t.payload, b"bye")
        self.assert_rpc_error(grpc.StatusCode.NOT_FOUND, self.stub.GetTimer, timer_pb2.GetTimerRequest(**key))
        self.assert_rpc_error(grpc.StatusCode.NOT_FOUND, self.stub.DeleteTimer,
                              timer_pb2.DeleteTimerRequest(**key))

    def test_get_stats_counts_shards_and_namespace_timers(self):
        self.start_ttl("py-stats", b"a", 60_000)
        self.start_ttl("py-stats", b"b", 60_000)
        stats = self.stub.GetStats(timer_pb2.GetStatsRequest(), timeout=RPC_TIMEOUT_S)
        self.assertEqual(sorted(s.shard for s in stats.shards), [0, 1])
        self.assertEqual(stats.pending_timers, sum(s.pending_timers for s in stats.shards))
        ns = [n for n in stats.namespaces if n.namespace == "py-stats"]
        self.assertEqual(len(ns), 1)
        self.assertEqual(ns[0].pending_timers, 2)
        self.assertEqual(ns[0].outbox, 0)


class SubscribeTest(LawndTestCase):

    def test_expiration_arrives_after_its_deadline_and_an_ack_empties_the_outbox(self):
        ns = "py-sub"
        requests = _RequestQueue()
        requests.put(timer_pb2.SubscribeRequest(open=timer_pb2.SubscribeRequest.Open(namespace=ns)))
        # The call deadline bounds every blocking next() below.
        responses = self.stub.Subscribe(requests, timeout=20)
        try:
            started = self.start_ttl(ns, b"e-1", 200, payload=b"ring")
            exp = next(responses).expiration
            self.assertEqual(exp.timer.namespace, ns)
            self.assertEqual(exp.timer.id, b"e-1")
            self.assertEqual(exp.timer.payload, b"ring")
            self.assertEqual(exp.timer.deadline, started.deadline)
            self.assertGreaterEqual(exp.fired_at.ToNanoseconds(), exp.timer.deadline.ToNanoseconds())
            self.assertEqual(exp.attempt, 1)
            self.assertNotEqual(exp.delivery_id, 0)
            # Unacked, the expiration is held in flight (ack_timeout defaults to 30 s, so no redelivery yet).
            self.assertEqual(self.namespace_stats(ns).outbox, 1)

            requests.put(timer_pb2.SubscribeRequest(
                ack=timer_pb2.SubscribeRequest.Ack(delivery_ids=[exp.delivery_id])))
            self.wait_until(lambda: self.namespace_stats(ns).outbox == 0, 30, "the ack to empty the outbox")
            stats = self.namespace_stats(ns)
            self.assertEqual(stats.pending_timers, 0)
            self.assertEqual(stats.subscribers, 1)
        finally:
            requests.close()
            responses.cancel()


    def test_batched_expirations_arrive_together_and_one_ack_takes_them_all(self):
        ns = "py-batch-sub"
        # Fired before the stream opens, so all three are ready at once and go in one response.
        req = timer_pb2.StartTimersRequest()
        for i in range(3):
            req.timers.add(namespace=ns, id=b"b-%d" % i, payload=b"x").ttl.FromMilliseconds(50)
        self.assertEqual([r.code for r in self.stub.StartTimers(req, timeout=RPC_TIMEOUT_S).results], [0] * 3)
        self.wait_until(lambda: (self.namespace_stats(ns) or timer_pb2.NamespaceStats()).outbox == 3, 10,
                        "the three timers to fire into the outbox")
        requests = _RequestQueue()
        requests.put(timer_pb2.SubscribeRequest(
            open=timer_pb2.SubscribeRequest.Open(namespace=ns, max_in_flight=10, max_batch=10)))
        responses = self.stub.Subscribe(requests, timeout=20)
        try:
            response = next(responses)
            self.assertFalse(response.HasField("expiration"))
            self.assertEqual(sorted(e.timer.id for e in response.expirations), [b"b-0", b"b-1", b"b-2"])
            for e in response.expirations:
                self.assertEqual(e.timer.namespace, ns)
                self.assertEqual(e.timer.payload, b"x")
                self.assertEqual(e.attempt, 1)
            requests.put(timer_pb2.SubscribeRequest(ack=timer_pb2.SubscribeRequest.Ack(
                delivery_ids=[e.delivery_id for e in response.expirations])))
            self.wait_until(lambda: self.namespace_stats(ns).outbox == 0, 30, "one ack to empty the outbox")
        finally:
            requests.close()
            responses.cancel()


class SecurityTest(LawndTestCase):
    """lawnd with TLS and auth.tokens_file: a token is needed, and it must grant the namespace's permission.

    Health stays open (the class waits for SERVING without a token). py-writer may start, delete, read and
    subscribe in "py-sec" and "py-sec-*"; py-reader may only read "py-sec".
    """

    WRITER_TOKEN = "py-writer-token-0123456789"
    READER_TOKEN = "py-reader-token-9876543210"

    @classmethod
    def lawnd_args(cls):
        certs = os.path.join(cls.tmp, "certs")
        subprocess.run(["bash", ARGS.make_certs, certs], check=True, timeout=60,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            cls.ca_pem = f.read()
        tokens = os.path.join(cls.tmp, "tokens.yaml")
        with open(tokens, "w") as f:
            f.write("tokens:\n"
                    "  - name: py-writer\n"
                    "    sha256: %s\n"
                    "    grants:\n"
                    "      - namespaces: [\"py-sec\", \"py-sec-*\"]\n"
                    "        permissions: [start, delete, read, subscribe]\n"
                    "  - name: py-reader\n"
                    "    sha256: %s\n"
                    "    grants:\n"
                    "      - namespaces: [\"py-sec\"]\n"
                    "        permissions: [read]\n"
                    % (hashlib.sha256(cls.WRITER_TOKEN.encode()).hexdigest(),
                       hashlib.sha256(cls.READER_TOKEN.encode()).hexdigest()))
        return ["--tls-cert-file", os.path.join(certs, "server.crt"),
                "--tls-key-file", os.path.join(certs, "server.key"),
                "--auth-tokens-file", tokens]

    @classmethod
    def open_channel(cls, port):
        # server.crt is issued for 127.0.0.1 (and localhost): no target-name override needed.
        credentials = grpc.ssl_channel_credentials(root_certificates=cls.ca_pem)
        return grpc.secure_channel("127.0.0.1:%d" % port, credentials)

    @staticmethod
    def bearer(token):
        return (("authorization", "Bearer " + token),)

    def start_request(self, ns, timer_id):
        req = timer_pb2.StartTimerRequest(namespace=ns, id=timer_id)
        req.ttl.FromSeconds(3600)
        return req

    def test_a_call_without_a_token_is_unauthenticated(self):
        self.assert_rpc_error(grpc.StatusCode.UNAUTHENTICATED, self.stub.StartTimer,
                              self.start_request("py-sec", b"no-token"))

    def test_an_unknown_token_is_unauthenticated(self):
        self.assert_rpc_error(grpc.StatusCode.UNAUTHENTICATED, self.stub.StartTimer,
                              self.start_request("py-sec", b"bad-token"),
                              metadata=self.bearer("not-a-known-token"))

    def test_a_granted_token_works_over_tls(self):
        t = self.stub.StartTimer(self.start_request("py-sec", b"granted"), timeout=RPC_TIMEOUT_S,
                                 metadata=self.bearer(self.WRITER_TOKEN)).timer
        self.assertEqual(t.namespace, "py-sec")
        self.assertEqual(t.id, b"granted")
        # The namespace pattern "py-sec-*" grants too, and a read-only token may read what was started.
        self.stub.StartTimer(self.start_request("py-sec-b", b"granted"), timeout=RPC_TIMEOUT_S,
                             metadata=self.bearer(self.WRITER_TOKEN))
        got = self.stub.GetTimer(timer_pb2.GetTimerRequest(namespace="py-sec", id=b"granted"),
                                 timeout=RPC_TIMEOUT_S, metadata=self.bearer(self.READER_TOKEN)).timer
        self.assertEqual(got.deadline, t.deadline)

    def test_a_token_without_the_permission_is_permission_denied(self):
        # py-reader may read py-sec but not start there, and has nothing at all in another namespace.
        self.assert_rpc_error(grpc.StatusCode.PERMISSION_DENIED, self.stub.StartTimer,
                              self.start_request("py-sec", b"denied"), metadata=self.bearer(self.READER_TOKEN))
        self.assert_rpc_error(grpc.StatusCode.PERMISSION_DENIED, self.stub.GetTimer,
                              timer_pb2.GetTimerRequest(namespace="py-other", id=b"x"),
                              metadata=self.bearer(self.READER_TOKEN))
        # Denied, so nothing was started: the writer finds no such timer.
        self.assert_rpc_error(grpc.StatusCode.NOT_FOUND, self.stub.GetTimer,
                              timer_pb2.GetTimerRequest(namespace="py-sec", id=b"denied"),
                              metadata=self.bearer(self.WRITER_TOKEN))

    def test_subscribe_needs_the_subscribe_permission(self):
        def open_stream(token):
            requests = _RequestQueue()
            requests.put(timer_pb2.SubscribeRequest(open=timer_pb2.SubscribeRequest.Open(namespace="py-sec")))
            return requests, self.stub.Subscribe(requests, timeout=20, metadata=self.bearer(token))

        requests, responses = open_stream(self.READER_TOKEN)
        try:
            with self.assertRaises(grpc.RpcError) as caught:
                next(responses)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED,
                             caught.exception.details())
        finally:
            requests.close()
            responses.cancel()

        requests, responses = open_stream(self.WRITER_TOKEN)
        try:
            req = timer_pb2.StartTimerRequest(namespace="py-sec", id=b"fires")
            req.ttl.FromMilliseconds(200)
            self.stub.StartTimer(req, timeout=RPC_TIMEOUT_S, metadata=self.bearer(self.WRITER_TOKEN))
            exp = next(responses).expiration
            self.assertEqual(exp.timer.id, b"fires")
        finally:
            requests.close()
            responses.cancel()

    def test_a_plaintext_client_cannot_reach_the_tls_port(self):
        with grpc.insecure_channel("127.0.0.1:%d" % self.lawnd.port) as plain:
            stub = timer_pb2_grpc.TimerServiceStub(plain)
            self.assert_rpc_error(grpc.StatusCode.UNAVAILABLE, stub.StartTimer,
                                  self.start_request("py-sec", b"plain"), metadata=self.bearer(self.WRITER_TOKEN))


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lawnd", required=True, help="path of the lawnd binary")
    parser.add_argument("--proto-dir", required=True, help="directory holding lawn/v1/timer.proto")
    parser.add_argument("--protoc", default=shutil.which("protoc") or "/usr/bin/protoc")
    parser.add_argument("--grpc-python-plugin", default="/usr/bin/grpc_python_plugin")
    parser.add_argument("--make-certs",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing",
                                             "make_certs.sh"),
                        help="tests/testing/make_certs.sh (throw-away TLS certificates)")
    parser.add_argument("--grpc-proto-dir", default="/usr/share/grpc-proto",
                        help="Debian's grpc-proto files (health and reflection)")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
