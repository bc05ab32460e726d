#!/usr/bin/python3
"""Soak driver: mixed traffic at a fixed rate against one running lawnd, resource samples, and a loss check.

Run by bench/scripts/soak.sh, which starts lawnd (and stops it). Needs Debian's /usr/bin/python3 (python3-grpcio,
python3-protobuf); the stubs are generated at run time by protoc and /usr/bin/grpc_python_plugin into a temp dir.

Traffic (rates are fixed, set from --rate = one-shot starts per second; every loop is bounded by time):
  * StartTimer one-shots (TTL 1..20 s, ~10% as an absolute deadline, ~30% with a payload) into the work
    namespaces, plus StartTimers batches of 10; recurring timers (interval 1..5 s) that the driver deletes after
    20..90 s; DeleteTimer / RescheduleTimer / GetTimer on recent one-shots; ListTimers (up to 3 pages).
  * Per work namespace: 2 work-sharing "ackers" (ack each expiration on the stream that received it, at once)
    and 1 "vanisher" that reads 1..10 s without acking, then cancels its call and comes back.
  * One subprocess vanisher (this script, --role vanisher) that reads without acking and is SIGKILLed after
    3..12 s, then respawned, rotating over the work namespaces.
  * Observers (observe=true) that never read their stream: 2 for the whole run, 1 that reconnects every 20..60 s.
  * One namespace with starts but no subscriber ("soak-nosub"): its outbox fills to max_outbox_per_namespace and
    must stay there (starts refused, due timers held); it gets an acker in the drain.
Every --sample-s seconds: lawnd's VmRSS, fds, threads, CPU time, GetStats, a few /metrics values (with the
slow tails of its latency histograms) and the host's load average and CPU/IO pressure into samples.csv.
After the load: stop the vanishers and observers, delete the recurring timers, attach an acker
to soak-nosub and drain (bounded) until every one-shot timer that was started and not deleted has been
delivered to an acker. Then check: lost (never delivered to an acker), early (fired_at, or the time it was
received, before the deadline it carries or the one the driver last set), and a few
impossibilities (delivered after a successful delete, two delivery ids for one one-shot timer).
Exit status: 0 when nothing was lost or early and no impossibility was seen, 1 otherwise, 2 on a setup error.
"""

import argparse
import collections
import csv
import ctypes
import importlib
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import grpc

pb = None  # lawn.v1.timer_pb2
pb_grpc = None  # lawn.v1.timer_pb2_grpc

WORK_NAMESPACES = ("soak-a", "soak-b", "soak-c")
NOSUB_NAMESPACE = "soak-nosub"
RPC_TIMEOUT_S = 10
MAX_OPS_IN_FLIGHT = 256
# Delete/reschedule/get pick among the last RECENT_KEYS one-shots started per namespace: at the default rate
# about 4-5 s of starts, so most are still pending and some fire while the call is on its way.
RECENT_KEYS = 300
# gRPC codes that say the call was refused before anything changed; any other failure leaves the outcome
# unknown (a timeout or a broken connection may come after the write).
REFUSED = {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.ALREADY_EXISTS}

# One-shot timer states.
ST_STARTING, ST_STARTED, ST_REFUSED, ST_START_UNKNOWN, ST_DELETED, ST_DELETE_UNKNOWN = range(6)


def generate_stubs(proto_dir, out_dir):
    cmd = [shutil.which("protoc") or "/usr/bin/protoc", "-I" + proto_dir, "--python_out=" + out_dir,
           "--grpc_python_out=" + out_dir, "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
           os.path.join(proto_dir, "lawn/v1/timer.proto")]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: %s\n%s" % (" ".join(cmd), done.stdout.decode(errors="replace")))
    for root, _, _ in os.walk(out_dir):
        if root != out_dir:
            open(os.path.join(root, "__init__.py"), "a").close()


def import_stubs(stub_dir):
    global pb, pb_grpc
    sys.path.insert(0, stub_dir)
    pb = importlib.import_module("lawn.v1.timer_pb2")
    pb_grpc = importlib.import_module("lawn.v1.timer_pb2_grpc")


def new_channel(port, own_connection):
    # A local subchannel pool gives the channel its own TCP connection (flow control of a stream that is
    # never read then stalls that connection only).
    options = [("grpc.use_local_subchannel_pool", 1)] if own_connection else []
    return grpc.insecure_channel("127.0.0.1:%d" % port, options=options)


class RequestQueue:
    """Request iterator of a Subscribe call: put() messages, close() to half-close (ends gRPC's reader thread)."""

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


def open_request(ns, max_in_flight, observe=False):
    return pb.SubscribeRequest(open=pb.SubscribeRequest.Open(namespace=ns, max_in_flight=max_in_flight,
                                                             observe=observe))


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


# ---- child role: a subscriber that reads without acking until it is killed ------------------------------------

def run_vanisher_child(args):
    import_stubs(args.stub_dir)
    try:  # Die with the parent (PR_SET_PDEATHSIG = 1).
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass
    channel = new_channel(args.port, True)
    stub = pb_grpc.TimerServiceStub(channel)
    requests = RequestQueue()
    requests.put(open_request(args.namespace, 20))
    # Bounded on its own too: the parent kills it long before this.
    responses = stub.Subscribe(requests, timeout=args.max_s)
    out = sys.stdout
    try:
        for r in responses:
            e = r.expiration
            out.write("recv %d %s %s %d %d %d %d\n" % (
                e.delivery_id, e.timer.namespace, e.timer.id.decode(errors="replace"),
                e.timer.deadline.ToNanoseconds(), e.fired_at.ToNanoseconds(), e.attempt,
                1 if e.timer.HasField("interval") else 0))
            out.flush()
    except grpc.RpcError:
        pass
    return 0


# ---- the driver -----------------------------------------------------------------------------------------------

class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.mu = threading.Lock()
        self.stop_load = threading.Event()  # Ends the load phase (pacer, vanishers, observers).
        self.stop_all = threading.Event()  # Ends the ackers and the sampler.
        self.phase = "load"
        self.t0 = time.monotonic()
        self.channel = new_channel(args.port, False)
        self.stub = pb_grpc.TimerServiceStub(self.channel)
        self.stats_channel = new_channel(args.port, True)
        self.stats_stub = pb_grpc.TimerServiceStub(self.stats_channel)
        self.inflight = threading.Semaphore(MAX_OPS_IN_FLIGHT)
        self.seq = 0
        # (ns, id) -> [state, deadline_ns, busy, ambiguous_deadline]
        self.oneshots = {}
        self.recent = {ns: [] for ns in WORK_NAMESPACES}  # Ring buffers of recently started one-shot keys.
        self.recent_pos = {ns: 0 for ns in WORK_NAMESPACES}
        self.recurring = {}  # (ns, id) -> delete-at (monotonic s)
        self.recurring_started = 0
        self.recurring_deleted = 0
        # Acker deliveries of one-shot timers: (ns, id) -> [count, delivery_id, first fired_at, deadline]
        self.delivered = {}
        self.counts = collections.Counter()  # (what) -> n
        self.codes = collections.Counter()  # (op, code name) -> n
        self.lateness_ms = []  # Acker receive time - deadline, first attempts of work-namespace one-shots.
        self.nosub_lateness_ms = []  # The same for soak-nosub (delivered in the drain).
        self.call_ms = collections.defaultdict(list)  # op -> call latencies (issue to answer), ms
        self.window_max_ms = 0.0  # Slowest call since the last sample.
        self.early_examples = []
        self.anomalies = []  # Impossibilities, with detail.
        self.threads = []
        self.samples = []
        self.sample_fields = None
        self.child_files = []
        self.child_dir = tempfile.mkdtemp(prefix="lawn-soak-children-")
        self.nosub_acker_started = False

    # ---- bookkeeping --------------------------------------------------------------------------------------

    def now_s(self):
        return time.monotonic() - self.t0

    def next_id(self, prefix):
        with self.mu:
            self.seq += 1
            return ("%s%09d" % (prefix, self.seq)).encode()

    def note(self, what, n=1):
        with self.mu:
            self.counts[what] += n

    def code(self, op, c):
        with self.mu:
            self.codes[(op, c.name if c is not None else "OK")] += 1

    def add_recent(self, ns, key):
        ring = self.recent[ns]
        if len(ring) < RECENT_KEYS:
            ring.append(key)
        else:
            ring[self.recent_pos[ns]] = key
            self.recent_pos[ns] = (self.recent_pos[ns] + 1) % len(ring)

    def pick_recent(self, ns):
        """A recently started one-shot key not busy with another call (marked busy), or None."""
        ring = self.recent[ns]
        for _ in range(4):
            if not ring:
                return None
            key = ring[self.rng.randrange(len(ring))]
            rec = self.oneshots.get(key)
            if rec is not None and rec[0] == ST_STARTED and not rec[2]:
                rec[2] = True
                return key
        return None

    def record_expiration(self, e, role, recv_ns):
        """Checks and counts one received expiration. role: acker, vanisher, child."""
        deadline = e.timer.deadline.ToNanoseconds()
        fired = e.fired_at.ToNanoseconds()
        key = (e.timer.namespace, bytes(e.timer.id))
        recurring = e.timer.HasField("interval")
        with self.mu:
            self.counts["received_" + role] += 1
            if e.attempt > 1:
                self.counts["received_%s_attempt_gt1" % role] += 1
            if e.late:
                self.counts["received_%s_late%s" % (role, "_nosub" if key[0] == NOSUB_NAMESPACE else "")] += 1
            if fired < deadline or recv_ns < deadline:
                self.counts["early"] += 1
                if len(self.early_examples) < 20:
                    self.early_examples.append(dict(ns=key[0], id=key[1].decode(), role=role, deadline=deadline,
                                                    fired_at=fired, received=recv_ns, attempt=e.attempt))
            if recurring:
                self.counts["recurring_firings_" + role] += 1
                return
            if role != "acker":
                return
            d = self.delivered.get(key)
            if d is None:
                self.delivered[key] = [1, e.delivery_id, fired, deadline]
                if e.attempt == 1:
                    (self.nosub_lateness_ms if key[0] == NOSUB_NAMESPACE else self.lateness_ms).append(
                        (recv_ns - deadline) / 1e6)
            else:
                d[0] += 1
                self.counts["acker_duplicates"] += 1
                if d[1] != e.delivery_id:
                    self.anomalies.append("two delivery ids for one-shot %s/%s: %d and %d"
                                          % (key[0], key[1].decode(), d[1], e.delivery_id))

    # ---- operations (asynchronous unary calls, paced by the pacer) ----------------------------------------

    def call(self, op, method, request, done):
        """Starts method(request) unless MAX_OPS_IN_FLIGHT calls are out; done(response, code) in a gRPC thread."""
        if not self.inflight.acquire(blocking=False):
            self.note("skipped_in_flight_" + op)
            return False
        issued = time.monotonic()
        fut = method.future(request, timeout=RPC_TIMEOUT_S)

        def finish(f):
            ms = (time.monotonic() - issued) * 1e3
            with self.mu:
                self.call_ms[op].append(ms)
                self.window_max_ms = max(self.window_max_ms, ms)
                if ms > 1000:
                    self.counts["calls_over_1s"] += 1
            try:
                try:
                    resp, c = f.result(), None
                except grpc.RpcError as err:
                    resp, c = None, err.code()
                self.code(op, c)
                done(resp, c)
            except Exception as ex:  # A bug in a callback must not go unnoticed.
                with self.mu:
                    self.anomalies.append("callback of %s raised %r" % (op, ex))
            finally:
                self.inflight.release()

        fut.add_done_callback(finish)
        return True

    def payload(self):
        if self.rng.random() < 0.3:
            return os.urandom(self.rng.randint(1, 512))
        return b""

    def fill_when(self, req, ttl_ms):
        if self.rng.random() < 0.1:
            req.deadline.FromNanoseconds(time.time_ns() + ttl_ms * 1_000_000)
        else:
            req.ttl.FromMilliseconds(ttl_ms)

    def op_start(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        self._start_oneshot(ns, self.rng.randint(1000, 20000))

    def op_start_nosub(self):
        self._start_oneshot(NOSUB_NAMESPACE, self.rng.randint(1000, 5000))

    def _start_oneshot(self, ns, ttl_ms):
        tid = self.next_id("o")
        key = (ns, tid)
        req = pb.StartTimerRequest(namespace=ns, id=tid, payload=self.payload())
        self.fill_when(req, ttl_ms)
        with self.mu:
            self.oneshots[key] = [ST_STARTING, None, True, False]

        def done(resp, c):
            with self.mu:
                rec = self.oneshots[key]
                rec[2] = False
                if c is None:
                    rec[0], rec[1] = ST_STARTED, resp.timer.deadline.ToNanoseconds()
                    if ns != NOSUB_NAMESPACE:
                        self.add_recent(ns, key)
                else:
                    rec[0] = ST_REFUSED if c in REFUSED else ST_START_UNKNOWN

        if not self.call("start", self.stub.StartTimer, req, done):
            with self.mu:
                del self.oneshots[key]

    def op_start_batch(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        req = pb.StartTimersRequest(return_timers=True)  # The deadlines, to check each expiration against.
        keys = []
        with self.mu:
            for _ in range(10):
                self.seq += 1
                tid = ("o%09d" % self.seq).encode()
                keys.append((ns, tid))
                self.oneshots[(ns, tid)] = [ST_STARTING, None, True, False]
        for _, tid in keys:
            item = req.timers.add(namespace=ns, id=tid, payload=self.payload())
            self.fill_when(item, self.rng.randint(1000, 20000))

        def done(resp, c):
            with self.mu:
                for i, key in enumerate(keys):
                    rec = self.oneshots[key]
                    rec[2] = False
                    if c is not None:
                        rec[0] = ST_START_UNKNOWN
                        continue
                    r = resp.results[i]
                    self.codes[("start_batch_item", grpc.StatusCode.OK.name if r.code == 0 else str(r.code))] += 1
                    if r.code == 0:
                        rec[0], rec[1] = ST_STARTED, r.timer.deadline.ToNanoseconds()
                        self.add_recent(ns, key)
                    else:
                        # Per-item codes are google.rpc codes: 3 INVALID_ARGUMENT, 6 ALREADY_EXISTS, 8
                        # RESOURCE_EXHAUSTED are refusals.
                        rec[0] = ST_REFUSED if r.code in (3, 6, 8) else ST_START_UNKNOWN

        if not self.call("start_batch", self.stub.StartTimers, req, done):
            with self.mu:
                for key in keys:
                    del self.oneshots[key]

    def op_start_recurring(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        tid = self.next_id("r")
        interval_ms = self.rng.randint(1000, 5000)
        req = pb.StartTimerRequest(namespace=ns, id=tid, payload=self.payload())
        req.ttl.FromMilliseconds(self.rng.choice([interval_ms, self.rng.randint(1000, 5000)]))
        req.interval.FromMilliseconds(interval_ms)
        lifetime = self.rng.uniform(20, 90)

        def done(resp, c):
            with self.mu:
                if c is None:
                    self.recurring_started += 1
                    self.recurring[(ns, tid)] = time.monotonic() + lifetime
                elif c not in REFUSED:
                    # Maybe started: delete it in the drain to be sure it stops firing.
                    self.recurring[(ns, tid)] = 0.0

        self.call("start_recurring", self.stub.StartTimer, req, done)

    def op_delete_recurring(self):
        """Deletes the recurring timers whose lifetime is over (a handful per call)."""
        now = time.monotonic()
        with self.mu:
            due = [k for k, t in self.recurring.items() if 0 < t <= now][:5]
            for k in due:
                self.recurring[k] = -1.0  # Being deleted.
        for ns, tid in due:
            self._delete_recurring(ns, tid)

    def _delete_recurring(self, ns, tid, sync=False):
        req = pb.DeleteTimerRequest(namespace=ns, id=tid)

        def done(resp, c):
            with self.mu:
                if c is None or c == grpc.StatusCode.NOT_FOUND:
                    self.recurring.pop((ns, tid), None)
                    if c is None:
                        self.recurring_deleted += 1
                else:
                    self.recurring[(ns, tid)] = 0.0  # Retry in the drain.

        if sync:
            try:
                self.stub.DeleteTimer(req, timeout=RPC_TIMEOUT_S)
                self.code("delete_recurring", None)
                done(None, None)
            except grpc.RpcError as err:
                self.code("delete_recurring", err.code())
                done(None, err.code())
        elif not self.call("delete_recurring", self.stub.DeleteTimer, req, done):
            with self.mu:
                self.recurring[(ns, tid)] = 0.0

    def op_delete(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        with self.mu:
            key = self.pick_recent(ns)
        if key is None:
            self.note("skipped_no_key_delete")
            return

        def done(resp, c):
            with self.mu:
                rec = self.oneshots[key]
                rec[2] = False
                if c is None:
                    rec[0] = ST_DELETED
                elif c != grpc.StatusCode.NOT_FOUND:
                    rec[0] = ST_DELETE_UNKNOWN
                # NOT_FOUND: it fired already; it must be delivered.

        if not self.call("delete", self.stub.DeleteTimer, pb.DeleteTimerRequest(namespace=ns, id=key[1]), done):
            with self.mu:
                self.oneshots[key][2] = False

    def op_reschedule(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        with self.mu:
            key = self.pick_recent(ns)
        if key is None:
            self.note("skipped_no_key_reschedule")
            return
        req = pb.RescheduleTimerRequest(namespace=ns, id=key[1])
        self.fill_when(req, self.rng.randint(1000, 20000))

        def done(resp, c):
            with self.mu:
                rec = self.oneshots[key]
                rec[2] = False
                if c is None:
                    rec[1] = resp.timer.deadline.ToNanoseconds()
                elif c != grpc.StatusCode.NOT_FOUND:
                    rec[3] = True  # Old or new deadline: unknown.

        if not self.call("reschedule", self.stub.RescheduleTimer, req, done):
            with self.mu:
                self.oneshots[key][2] = False

    def op_get(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        with self.mu:
            key = self.pick_recent(ns)
        if key is None:
            self.note("skipped_no_key_get")
            return

        def done(resp, c):
            with self.mu:
                rec = self.oneshots[key]
                rec[2] = False
                if c is None and not rec[3] and resp.timer.deadline.ToNanoseconds() != rec[1]:
                    self.anomalies.append("GetTimer %s/%s: deadline %d, driver has %d" % (
                        ns, key[1].decode(), resp.timer.deadline.ToNanoseconds(), rec[1]))

        if not self.call("get", self.stub.GetTimer, pb.GetTimerRequest(namespace=ns, id=key[1]), done):
            with self.mu:
                self.oneshots[key][2] = False

    def op_list(self):
        ns = WORK_NAMESPACES[self.rng.randrange(len(WORK_NAMESPACES))]
        pages = self.rng.randint(1, 3)

        def page(token, left):
            def done(resp, c):
                if c is None:
                    with self.mu:
                        self.counts["listed_timers"] += len(resp.timers)
                    if resp.next_page_token and left > 1 and not self.stop_load.is_set():
                        page(resp.next_page_token, left - 1)

            self.call("list", self.stub.ListTimers, pb.ListTimersRequest(namespace=ns, page_size=200,
                                                                        page_token=token), done)

        page("", pages)

    # ---- pacer ---------------------------------------------------------------------------------------------

    def schedule(self):
        r = self.args.rate
        return [
            ("start", r * 0.94, self.op_start),
            ("start_batch", r * 0.006, self.op_start_batch),  # x10 timers: 6% of the one-shots.
            ("start_nosub", self.args.nosub_rate, self.op_start_nosub),
            ("start_recurring", max(0.2, r / 150.0), self.op_start_recurring),
            ("delete_recurring", 2.0, self.op_delete_recurring),
            ("delete", r / 5.0, self.op_delete),
            ("reschedule", r / 5.0, self.op_reschedule),
            ("get", r / 3.0, self.op_get),
            ("list", 0.5, self.op_list),
        ]

    def pacer(self, end_s):
        ops = [(name, 1.0 / rate, fn) for name, rate, fn in self.schedule() if rate > 0]
        start = time.monotonic()
        nxt = [start + self.rng.uniform(0, period) for _, period, _ in ops]
        while not self.stop_load.is_set():
            i = min(range(len(ops)), key=nxt.__getitem__)
            now = time.monotonic()
            if nxt[i] >= start + end_s:
                break
            if nxt[i] > now:
                time.sleep(min(nxt[i] - now, 0.5))
                continue
            name, period, fn = ops[i]
            if now - nxt[i] > 1.0:  # More than 1 s behind: drop the missed slots instead of bursting.
                missed = int((now - nxt[i]) / period)
                self.note("skipped_behind_" + name, missed)
                nxt[i] += missed * period
            fn()
            self.note("issued_" + name)
            nxt[i] += period
        self.stop_load.set()

    # ---- subscribers ---------------------------------------------------------------------------------------

    def acker(self, ns, max_in_flight, until):
        """Acks every expiration on the stream that received it; reconnects until `until` is set."""
        channel = new_channel(self.args.port, True)
        stub = pb_grpc.TimerServiceStub(channel)
        current = [None]
        lock = threading.Lock()

        def cancel_at_end():
            until.wait()
            with lock:
                if current[0] is not None:
                    current[0].cancel()

        threading.Thread(target=cancel_at_end, daemon=True).start()
        while not until.is_set():
            requests = RequestQueue()
            requests.put(open_request(ns, max_in_flight))
            with lock:
                if until.is_set():
                    break
                responses = current[0] = stub.Subscribe(requests)
            try:
                for r in responses:
                    e = r.expiration
                    self.record_expiration(e, "acker", time.time_ns())
                    requests.put(pb.SubscribeRequest(ack=pb.SubscribeRequest.Ack(delivery_ids=[e.delivery_id])))
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.CANCELLED or not until.is_set():
                    self.note("acker_stream_error_" + err.code().name)
            finally:
                requests.close()
                responses.cancel()
            if not until.is_set():
                self.note("acker_reconnects")
                until.wait(0.5)
        channel.close()

    def vanisher(self, ns):
        """Reads 1..10 s (or up to max_in_flight messages and then waits) without acking, cancels, comes back."""
        channel = new_channel(self.args.port, True)
        stub = pb_grpc.TimerServiceStub(channel)
        rng = random.Random(self.rng.random())
        while not self.stop_load.is_set():
            requests = RequestQueue()
            requests.put(open_request(ns, rng.randint(5, 50)))
            responses = stub.Subscribe(requests)
            hold_s = rng.uniform(1, 10)
            # Cancels the call after hold_s, or at once when the load ends.
            threading.Thread(target=lambda call=responses: (self.stop_load.wait(hold_s), call.cancel()),
                             daemon=True).start()
            try:
                for r in responses:
                    self.record_expiration(r.expiration, "vanisher", time.time_ns())
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.CANCELLED:
                    self.note("vanisher_stream_error_" + err.code().name)
            finally:
                requests.close()
                responses.cancel()
            self.note("vanisher_cancels")
            self.stop_load.wait(rng.uniform(0.5, 3))
        channel.close()

    def child_vanisher(self):
        """Spawns `soak.py --role vanisher`, SIGKILLs it (its PID only) after 3..12 s, again until the load ends."""
        rng = random.Random(self.rng.random())
        n = 0
        while not self.stop_load.is_set():
            ns = WORK_NAMESPACES[n % len(WORK_NAMESPACES)]
            path = os.path.join(self.child_dir, "child-vanisher-%d.txt" % n)
            self.child_files.append(path)
            with open(path, "w") as f:
                proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--role", "vanisher",
                                         "--port", str(self.args.port), "--namespace", ns,
                                         "--stub-dir", self.args.stub_dir, "--max-s", "60"],
                                        stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
            self.stop_load.wait(rng.uniform(3, 12))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                self.note("child_kills")
            else:
                self.note("child_exited_early")
            proc.wait(timeout=30)
            n += 1
            self.stop_load.wait(rng.uniform(1, 3))

    def observer(self, ns, cycle):
        """Opens observe=true streams and never reads them; with `cycle`, reconnects every 20..60 s."""
        channel = new_channel(self.args.port, True)
        stub = pb_grpc.TimerServiceStub(channel)
        rng = random.Random(self.rng.random())
        while not self.stop_load.is_set():
            requests = RequestQueue()
            requests.put(open_request(ns, 1000, observe=True))
            responses = stub.Subscribe(requests)
            self.note("observer_opens")
            self.stop_load.wait(rng.uniform(20, 60) if cycle else None)
            requests.close()
            responses.cancel()
            if responses.code() not in (grpc.StatusCode.CANCELLED, None):
                self.note("observer_stream_error_" + responses.code().name)
        channel.close()

    # ---- samples -------------------------------------------------------------------------------------------

    def read_proc(self):
        pid = self.args.pid
        rss = threads = None
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return rss, fds, threads, cpu_s

    # Histograms whose slow tail goes into the samples: name -> (column prefix, thresholds in s).
    SLOW_HISTOGRAMS = {
        "lawn_storage_write_duration_seconds": "storage_writes",  # one group-committed write, with fsync
        "lawn_request_duration_seconds": "requests",  # receive to answer, all methods
        "lawn_expiry_lateness_seconds": "expiries",  # deadline to first hand-over to a subscriber
    }

    def scrape_metrics(self):
        """Sums of a few gauges and counters over their labels, and the histograms' total / over-0.5 s /
        over-1 s counts (cumulative since lawnd started)."""
        wanted = ("lawn_held_timers", "lawn_outbox_bytes", "lawn_data_dir_bytes", "lawn_acks_ignored_total",
                  "lawn_skipped_firings_total", "lawn_subscribers")
        out = {w: 0.0 for w in wanted}
        buckets = collections.defaultdict(float)  # (histogram, le) -> count, summed over labels
        for col in self.SLOW_HISTOGRAMS.values():
            out.update({col: 0, col + "_over_500ms": 0, col + "_over_1s": 0})
        if not self.args.metrics_port:
            return out
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.args.metrics_port, timeout=5) as r:
                text = r.read().decode()
        except OSError:
            self.note("metrics_scrape_errors")
            return out
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"([a-zA-Z_:]+)(\{[^}]*\})?\s+(\S+)", line)
            if not m:
                continue
            name, value = m.group(1), float(m.group(3))
            if name in out:
                out[name] += value
            elif name.endswith("_bucket") and name[:-len("_bucket")] in self.SLOW_HISTOGRAMS:
                le = re.search(r'le="([^"]+)"', m.group(2) or "")
                if le:
                    buckets[(name[:-len("_bucket")], le.group(1))] += value
        for hist, col in self.SLOW_HISTOGRAMS.items():
            total = buckets[(hist, "+Inf")]
            out[col] = int(total)
            out[col + "_over_500ms"] = int(total - buckets[(hist, "0.5")])
            out[col + "_over_1s"] = int(total - buckets[(hist, "1")])
        return out

    @staticmethod
    def host_pressure():
        """The machine's 1-min load average and pressure stall information (some avg10 %, cpu and io)."""
        row = {}
        with open("/proc/loadavg") as f:
            row["loadavg1"] = float(f.read().split()[0])
        for res in ("cpu", "io"):
            try:
                with open("/proc/pressure/%s" % res) as f:
                    some = f.readline().split()
                row["psi_%s_some_avg10" % res] = float(some[1].split("=")[1])
            except (OSError, IndexError, ValueError):
                row["psi_%s_some_avg10" % res] = ""
        return row

    def sample(self):
        rss, fds, threads, cpu_s = self.read_proc()
        row = dict(t_s=round(self.now_s(), 1), phase=self.phase, rss_kib=rss, fds=fds, threads=threads,
                   lawnd_cpu_s=round(cpu_s, 2))
        try:
            st = self.stats_stub.GetStats(pb.GetStatsRequest(), timeout=RPC_TIMEOUT_S)
            row.update(pending=st.pending_timers, outbox=st.outbox, redeliveries=st.redeliveries)
            nosub = [n for n in st.namespaces if n.namespace == NOSUB_NAMESPACE]
            row.update(nosub_outbox=nosub[0].outbox if nosub else 0,
                       nosub_pending=nosub[0].pending_timers if nosub else 0)
            row["subscribers"] = sum(n.subscribers for n in st.namespaces)
        except grpc.RpcError as err:
            self.note("stats_errors")
            row.update(pending="", outbox="", redeliveries="", nosub_outbox="", nosub_pending="", subscribers="")
            print("GetStats failed: %s" % err.code().name, file=sys.stderr)
        met = self.scrape_metrics()
        row.update(held_timers=int(met["lawn_held_timers"]), outbox_bytes=int(met["lawn_outbox_bytes"]),
                   data_dir_bytes=int(met["lawn_data_dir_bytes"]), acks_ignored=int(met["lawn_acks_ignored_total"]))
        for col in self.SLOW_HISTOGRAMS.values():
            for suffix in ("", "_over_500ms", "_over_1s"):
                row[col + suffix] = met[col + suffix]
        row.update(self.host_pressure())
        with self.mu:
            row.update(oneshots_started=self.codes[("start", "OK")] + self.codes[("start_batch_item", "OK")],
                       acker_received=self.counts["received_acker"],
                       skipped=sum(v for k, v in self.counts.items() if k.startswith("skipped_")),
                       max_call_ms=round(self.window_max_ms, 1))
            self.window_max_ms = 0.0
        t = os.times()
        row["driver_cpu_s"] = round(t.user + t.system + t.children_user + t.children_system, 2)
        with open("/proc/self/status") as f:
            row["driver_rss_kib"] = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return row

    def sampler(self):
        path = os.path.join(self.args.out, "samples.csv")
        with open(path, "w", newline="") as f:
            writer = None
            while True:
                try:
                    row = self.sample()
                except FileNotFoundError:
                    print("lawnd (pid %d) is gone" % self.args.pid, file=sys.stderr)
                    with self.mu:
                        self.anomalies.append("lawnd (pid %d) exited during the run" % self.args.pid)
                    self.stop_load.set()
                    return
                if writer is None:
                    writer = csv.DictWriter(f, fieldnames=list(row))
                    writer.writeheader()
                writer.writerow(row)
                f.flush()
                self.samples.append(row)
                print("[%7.1fs %s] rss %.1f MiB fds %d threads %d pending %s outbox %s nosub_outbox %s "
                      "received %d" % (row["t_s"], row["phase"], row["rss_kib"] / 1024, row["fds"], row["threads"],
                                       row["pending"], row["outbox"], row["nosub_outbox"], row["acker_received"]),
                      flush=True)
                if self.stop_all.wait(self.args.sample_s):
                    break
            # The closing sample, after the drain.
            try:
                row = self.sample()
            except FileNotFoundError:
                return
            writer.writerow(row)
            self.samples.append(row)

    # ---- run -----------------------------------------------------------------------------------------------

    def spawn(self, target, *args):
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self.threads.append(t)
        return t

    def expected_missing(self):
        """One-shot keys started, not deleted, and not (yet) delivered to an acker."""
        with self.mu:
            return [k for k, rec in self.oneshots.items()
                    if rec[0] == ST_STARTED and k not in self.delivered]

    def run(self):
        args = self.args
        load_s = args.minutes * 60.0
        stop_ackers = threading.Event()
        sampler = self.spawn(self.sampler)
        for ns in WORK_NAMESPACES:
            for _ in range(2):
                self.spawn(self.acker, ns, 100, stop_ackers)
        load_threads = []
        for ns in WORK_NAMESPACES:
            load_threads.append(self.spawn(self.vanisher, ns))
        load_threads.append(self.spawn(self.child_vanisher))
        load_threads.append(self.spawn(self.observer, WORK_NAMESPACES[0], False))
        load_threads.append(self.spawn(self.observer, WORK_NAMESPACES[1], False))
        load_threads.append(self.spawn(self.observer, WORK_NAMESPACES[2], True))
        load_start = time.monotonic()
        self.pacer(load_s)
        load_end = time.monotonic()
        self.stop_load.set()
        print("load phase over after %.1f s; draining" % (load_end - load_start), flush=True)
        with self.mu:
            self.phase = "drain"
        for t in load_threads:
            t.join(timeout=30)
        # Calls still out (each bounded by RPC_TIMEOUT_S): wait for all of them, at most RPC_TIMEOUT_S + 5 s.
        wait_until = time.monotonic() + RPC_TIMEOUT_S + 5
        taken = 0
        while taken < MAX_OPS_IN_FLIGHT and self.inflight.acquire(timeout=max(0.0, wait_until - time.monotonic())):
            taken += 1
        for _ in range(taken):
            self.inflight.release()
        if taken < MAX_OPS_IN_FLIGHT:
            self.note("calls_unfinished_after_load", MAX_OPS_IN_FLIGHT - taken)
        # Stop every recurring timer (bounded: one pass, then a retry pass for failures).
        for _ in range(2):
            with self.mu:
                keys = list(self.recurring)
            for ns, tid in keys:
                self._delete_recurring(ns, tid, sync=True)
        self.spawn(self.acker, NOSUB_NAMESPACE, 1000, stop_ackers)
        drain_start = time.monotonic()
        drain_limit = drain_start + args.drain_s
        missing = self.expected_missing()
        outbox = pending = None
        while time.monotonic() < drain_limit:
            missing = self.expected_missing()
            try:
                st = self.stats_stub.GetStats(pb.GetStatsRequest(), timeout=RPC_TIMEOUT_S)
                outbox, pending = st.outbox, st.pending_timers
            except grpc.RpcError:
                outbox = pending = None
            if not missing and outbox == 0 and pending == 0:
                break
            time.sleep(1)
        drain_s = time.monotonic() - drain_start
        time.sleep(1)  # Late duplicates, if any, arrive now.
        stop_ackers.set()
        self.stop_all.set()
        sampler.join(timeout=60)
        for t in self.threads:
            t.join(timeout=15)
        return self.report(load_end - load_start, drain_s, outbox, pending)

    # ---- report --------------------------------------------------------------------------------------------

    def child_counts(self):
        received = early = 0
        for path in self.child_files:
            try:
                with open(path) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) != 8 or parts[0] != "recv":
                            continue
                        received += 1
                        if int(parts[5]) < int(parts[4]):
                            early += 1
                            if len(self.early_examples) < 20:
                                self.early_examples.append(dict(role="child", line=line.strip()))
            except OSError:
                pass
        shutil.rmtree(self.child_dir, ignore_errors=True)
        return received, early

    def report(self, load_s, drain_s, final_outbox, final_pending):
        child_received, child_early = self.child_counts()
        with self.mu:
            states = collections.Counter(rec[0] for rec in self.oneshots.values())
            expected = [k for k, rec in self.oneshots.items() if rec[0] == ST_STARTED]
            lost = [k for k in expected if k not in self.delivered]
            deleted_delivered = [k for k, rec in self.oneshots.items() if rec[0] == ST_DELETED and k in self.delivered]
            early_vs_driver = []
            deadline_mismatch = 0
            for k in expected:
                d = self.delivered.get(k)
                rec = self.oneshots[k]
                if d is None or rec[3]:
                    continue
                if d[3] != rec[1]:
                    deadline_mismatch += 1
                if d[2] < rec[1]:
                    early_vs_driver.append(k)
            for k in deleted_delivered:
                self.anomalies.append("delivered after a successful delete: %s/%s" % (k[0], k[1].decode()))
            lateness = sorted(self.lateness_ms)
            nosub_lateness = sorted(self.nosub_lateness_ms)
            call_ms = {}
            for op, v in sorted(self.call_ms.items()):
                v = sorted(v)
                if v:
                    call_ms[op] = dict(n=len(v), p50=round(percentile(v, 50), 2), p99=round(percentile(v, 99), 2),
                                       max=round(v[-1], 1))
            nosub_expected = sum(1 for k in expected if k[0] == NOSUB_NAMESPACE)
            nosub_refused = sum(1 for k, rec in self.oneshots.items()
                                if k[0] == NOSUB_NAMESPACE and rec[0] == ST_REFUSED)
            codes_raw = dict(self.codes)
            codes = {"%s %s" % k: v for k, v in sorted(self.codes.items())}
            counts = dict(sorted(self.counts.items()))
            early = self.counts["early"] + child_early + len(early_vs_driver)

        def col(name):
            return [s[name] for s in self.samples if s.get(name) not in ("", None)]

        def first_last_max(name, scale=1.0):
            v = col(name)
            if not v:
                return None
            load_rows = [s[name] for s in self.samples if s["phase"] == "load" and s.get(name) not in ("", None)]
            # "warm": the first sample at or after 25% of the load phase (capped at 5 minutes).
            warm_t = min(300.0, 0.25 * load_s)
            warm = next((s[name] for s in self.samples if s["t_s"] >= warm_t and s.get(name) not in ("", None)),
                        v[0])
            end_of_load = load_rows[-1] if load_rows else v[-1]
            return dict(first=v[0] / scale, warm=warm / scale, end_of_load=end_of_load / scale,
                        last=v[-1] / scale, min=min(v) / scale, max=max(v) / scale)

        resources = dict(rss_mib=first_last_max("rss_kib", 1024.0), fds=first_last_max("fds"),
                         threads=first_last_max("threads"), driver_rss_mib=first_last_max("driver_rss_kib", 1024.0),
                         data_dir_mib=first_last_max("data_dir_bytes", 1024.0 * 1024.0),
                         nosub_outbox=first_last_max("nosub_outbox"), outbox=first_last_max("outbox"),
                         pending=first_last_max("pending"))
        lawnd_cpu = col("lawnd_cpu_s")
        last = self.samples[-1] if self.samples else {}
        slow = {k: last.get(k) for k in sorted(last) if k.endswith(("_over_500ms", "_over_1s"))}
        for col_name in self.SLOW_HISTOGRAMS.values():
            slow[col_name] = last.get(col_name)

        def mean(name):
            v = [float(s[name]) for s in self.samples if s["phase"] == "load" and s.get(name) not in ("", None)]
            return round(sum(v) / len(v), 2) if v else None

        host = dict(loadavg1_mean=mean("loadavg1"), loadavg1_max=max(col("loadavg1") or [0]),
                    psi_cpu_some_avg10_mean=mean("psi_cpu_some_avg10"),
                    psi_io_some_avg10_mean=mean("psi_io_some_avg10"))
        answered = collections.Counter()
        for (op, _), v in codes_raw.items():
            answered[op] += v
        result = dict(
            minutes=self.args.minutes, load_s=round(load_s, 1), drain_s=round(drain_s, 1), rate=self.args.rate,
            answered_per_s={k: round(v / load_s, 1) for k, v in sorted(answered.items())},
            unary_calls_per_s=round(sum(v for k, v in answered.items() if k != "start_batch_item") / load_s, 1),
            oneshot_started=len(expected) + states[ST_DELETED] + states[ST_DELETE_UNKNOWN],
            oneshot_deleted=states[ST_DELETED], oneshot_delete_unknown=states[ST_DELETE_UNKNOWN],
            oneshot_refused=states[ST_REFUSED], oneshot_start_unknown=states[ST_START_UNKNOWN],
            oneshot_expected=len(expected), oneshot_delivered=len(expected) - len(lost),
            nosub_expected=nosub_expected, nosub_refused=nosub_refused,
            acker_deliveries=counts.get("received_acker", 0),
            redelivered_attempt_gt1=counts.get("received_acker_attempt_gt1", 0),
            acker_duplicates=counts.get("acker_duplicates", 0),
            late_marked=counts.get("received_acker_late", 0),
            late_marked_nosub=counts.get("received_acker_late_nosub", 0),
            vanisher_received=counts.get("received_vanisher", 0), child_received=child_received,
            recurring_started=self.recurring_started, recurring_deleted=self.recurring_deleted,
            recurring_firings_acked=counts.get("recurring_firings_acker", 0),
            lost=len(lost), early=early, early_vs_driver=len(early_vs_driver), deadline_mismatch=deadline_mismatch,
            deleted_but_delivered=len(deleted_delivered), anomalies=self.anomalies[:50],
            lost_examples=["%s/%s" % (k[0], k[1].decode()) for k in lost[:20]], early_examples=self.early_examples,
            lateness_ms=dict(p50=percentile(lateness, 50), p99=percentile(lateness, 99),
                             p999=percentile(lateness, 99.9), max=lateness[-1] if lateness else None),
            nosub_lateness_max_s=round(nosub_lateness[-1] / 1e3, 1) if nosub_lateness else None,
            call_ms=call_ms, final_outbox=final_outbox, final_pending=final_pending,
            driver_cpu_s=col("driver_cpu_s")[-1] if col("driver_cpu_s") else None,
            lawnd_cpu_s=lawnd_cpu[-1] if lawnd_cpu else None,
            resources=resources, lawnd_slow_events=slow, host=host, codes=codes, counts=counts)
        nosub_max = (resources["nosub_outbox"] or {}).get("max", 0)
        if nosub_max > self.args.max_outbox:
            self.anomalies.append("soak-nosub outbox reached %d, above max_outbox_per_namespace %d"
                                  % (nosub_max, self.args.max_outbox))
        result["anomalies"] = self.anomalies[:50]
        ok = not lost and early == 0 and not self.anomalies
        result["ok"] = ok
        with open(os.path.join(self.args.out, "result.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        self.print_summary(result)
        return 0 if ok else 1

    def print_summary(self, r):
        lines = []
        lines.append("soak: %.1f min of load (%.1f s drain), one-shot start rate %s/s" % (
            r["load_s"] / 60, r["drain_s"], r["rate"]))
        lines.append("answered per s: " + ", ".join("%s %s" % kv for kv in r["answered_per_s"].items()))
        lines.append("unary calls per s (all kinds): %s" % r["unary_calls_per_s"])
        lines.append("one-shot: started %d, deleted %d (unknown %d), refused %d, start unknown %d, expected %d, "
                     "delivered %d, lost %d, early %d (vs driver deadline %d), deleted-but-delivered %d" % (
                         r["oneshot_started"], r["oneshot_deleted"], r["oneshot_delete_unknown"], r["oneshot_refused"],
                         r["oneshot_start_unknown"], r["oneshot_expected"], r["oneshot_delivered"], r["lost"],
                         r["early"], r["early_vs_driver"], r["deleted_but_delivered"]))
        lines.append("acker deliveries %d, redelivered (attempt>1) %d, duplicates %d, late-marked %d (+%d in "
                     "soak-nosub); vanishers received %d, killed children received %d" % (
                         r["acker_deliveries"], r["redelivered_attempt_gt1"], r["acker_duplicates"], r["late_marked"],
                         r["late_marked_nosub"],
                         r["vanisher_received"], r["child_received"]))
        lines.append("soak-nosub: expected %d (all must arrive in the drain), refused %d" % (
            r["nosub_expected"], r["nosub_refused"]))
        lines.append("recurring: started %d, deleted %d, firings acked %d" % (
            r["recurring_started"], r["recurring_deleted"], r["recurring_firings_acked"]))
        lat = r["lateness_ms"]
        if lat["p50"] is not None:
            lines.append("receive lateness (first attempt) ms: p50 %.2f p99 %.2f p99.9 %.2f max %.1f" % (
                lat["p50"], lat["p99"], lat["p999"], lat["max"]))
        lines.append("soak-nosub receive lateness max %s s (held until the drain)" % r["nosub_lateness_max_s"])
        lines.append("call latency ms (issue to answer): " + "; ".join(
            "%s p50 %.1f p99 %.1f max %.0f" % (op, v["p50"], v["p99"], v["max"]) for op, v in r["call_ms"].items()))
        lines.append("skipped slots: " + ", ".join("%s=%d" % (k, v) for k, v in r["counts"].items()
                                                  if k.startswith("skipped_")) + "; calls over 1 s: %d" %
                     r["counts"].get("calls_over_1s", 0))
        lines.append("CPU s: lawnd %s, driver (with children) %s" % (r["lawnd_cpu_s"], r["driver_cpu_s"]))
        lines.append("after drain: outbox %s, pending %s" % (r["final_outbox"], r["final_pending"]))
        lines.append("lawnd slow events (from /metrics histograms): " + ", ".join(
            "%s=%s" % kv for kv in r["lawnd_slow_events"].items()))
        lines.append("host during the load: load average (1 min) mean %s max %s; CPU pressure some avg10 mean %s%%; "
                     "IO pressure some avg10 mean %s%%" % (r["host"]["loadavg1_mean"], r["host"]["loadavg1_max"],
                                                          r["host"]["psi_cpu_some_avg10_mean"],
                                                          r["host"]["psi_io_some_avg10_mean"]))
        lines.append("%-16s %10s %10s %12s %10s %10s %10s" % ("", "first", "warm", "end of load", "last", "min",
                                                               "max"))
        for name, v in r["resources"].items():
            if v:
                lines.append("%-16s %10.1f %10.1f %12.1f %10.1f %10.1f %10.1f" % (
                    name, v["first"], v["warm"], v["end_of_load"], v["last"], v["min"], v["max"]))
        if r["anomalies"]:
            lines.append("ANOMALIES: " + "; ".join(r["anomalies"][:10]))
        if r["lost_examples"]:
            lines.append("lost, e.g.: " + ", ".join(r["lost_examples"][:10]))
        if r["early_examples"]:
            lines.append("early, e.g.: %s" % r["early_examples"][:5])
        lines.append("codes: " + ", ".join("%s=%d" % kv for kv in r["codes"].items()))
        lines.append("RESULT: %s" % ("PASS" if r["ok"] else "FAIL"))
        text = "\n".join(lines)
        print(text, flush=True)
        with open(os.path.join(self.args.out, "summary.txt"), "w") as f:
            f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=("driver", "vanisher"), default="driver")
    parser.add_argument("--port", type=int, required=True, help="lawnd's gRPC port on 127.0.0.1")
    parser.add_argument("--pid", type=int, help="lawnd's PID (sampled from /proc)")
    parser.add_argument("--metrics-port", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the load phase")
    parser.add_argument("--rate", type=float, default=200.0, help="one-shot starts per second (others scale)")
    parser.add_argument("--nosub-rate", type=float, default=20.0, help="starts per second into soak-nosub")
    parser.add_argument("--max-outbox", type=int, default=2000, help="lawnd's max_outbox_per_namespace")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--drain-s", type=float, default=120.0, help="longest drain after the load")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="directory for samples.csv, result.json, summary.txt")
    parser.add_argument("--proto-dir", help="directory holding lawn/v1/timer.proto")
    parser.add_argument("--stub-dir", help="(vanisher role) generated stubs")
    parser.add_argument("--namespace", help="(vanisher role)")
    parser.add_argument("--max-s", type=float, default=60.0, help="(vanisher role) longest life")
    args = parser.parse_args()
    if args.role == "vanisher":
        return run_vanisher_child(args)
    if not args.pid or not args.out or not args.proto_dir:
        parser.error("--pid, --out and --proto-dir are required")
    os.makedirs(args.out, exist_ok=True)
    stub_dir = tempfile.mkdtemp(prefix="lawn-soak-stubs-")
    try:
        try:
            generate_stubs(args.proto_dir, stub_dir)
            import_stubs(stub_dir)
        except (RuntimeError, OSError, ImportError, subprocess.SubprocessError) as err:
            print("soak.py: cannot generate the stubs: %s" % err, file=sys.stderr)
            return 2
        args.stub_dir = stub_dir
        return Soak(args).run()
    finally:
        shutil.rmtree(stub_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
