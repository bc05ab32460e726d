"""Shared by the client tests: command line, a lawnd per test class, bounded waits, a droppable TCP proxy.

Each test program runs as `/usr/bin/python3 X_test.py --lawnd PATH --proto-dir DIR [unittest args]` with
PYTHONPATH holding clients/python (the package is used from the source tree; install_test.py covers pip).
Tests sharing a class's lawnd use namespaces of their own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest
from typing import Callable, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lawnd_process import Lawnd  # noqa: E402

ARGS = argparse.Namespace()

WAIT_S = 20  # Bound of every wait for an event; generous, never a timing assertion.


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lawnd", required=True, help="path of the lawnd binary")
    parser.add_argument("--proto-dir", required=True, help="directory holding lawn/v1/timer.proto")
    parser.add_argument("--make-certs", default=os.path.join(HERE, "..", "..", "..", "tests", "testing",
                                                             "make_certs.sh"))
    parser.add_argument("--source-dir", default=os.path.join(HERE, "..", "..", ".."),
                        help="the repository root (examples/, clients/python)")
    global ARGS
    ARGS, rest = parser.parse_known_args()
    for name in ("lawnd", "proto_dir", "make_certs", "source_dir"):
        setattr(ARGS, name, os.path.abspath(getattr(ARGS, name)))
    os.environ.setdefault("LAWN_PROTO_DIR", ARGS.proto_dir)
    unittest.main(module="__main__", argv=[sys.argv[0]] + rest, verbosity=2)


def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Polls predicate() (an RPC: there is nothing to await) until true; AssertionError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def take(subscription, count: int) -> list:
    """The next `count` expirations; a watchdog closes the subscription after WAIT_S so a miss fails."""
    watchdog = threading.Timer(WAIT_S, subscription.close)
    watchdog.daemon = True
    watchdog.start()
    got: list = []
    try:
        for exp in subscription:
            got.append(exp)
            if len(got) == count:
                break
    finally:
        watchdog.cancel()
    if len(got) < count:
        raise AssertionError(f"got {len(got)} of {count} expirations within {WAIT_S} s: {got}")
    return got


def wait_serving(client, namespace: str = "py-ready") -> None:
    """Until lawnd has recovered: timer calls get Unavailable until then (GetStats does not), so probe with
    GetTimer, which answers NotFound once lawnd serves. The client needs read permission on `namespace`."""
    import lawn

    def serving() -> bool:
        try:
            client.get(namespace, "ready-probe")
        except lawn.NotFound:
            return True
        except lawn.Unavailable:
            return False
        return True

    wait_until(serving, "lawnd to serve")


class LawndTestCase(unittest.TestCase):
    """One lawnd per class in a temp dir; subclasses add flags with lawnd_args()."""

    @classmethod
    def lawnd_args(cls) -> Sequence[str]:
        return []

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="lawn-pyclient-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.lawnd = Lawnd(ARGS.lawnd, os.path.join(cls.tmp, "data"), cls.lawnd_args())
        cls.addClassCleanup(cls.lawnd.stop)

    def namespace_stats(self, client, ns: str):
        import lawn

        return client.stats().namespaces.get(ns) or lawn.NamespaceStats(ns, 0, 0, 0)


class DroppingProxy:
    """A TCP proxy to `target_port` on 127.0.0.1 whose drop() cuts every open connection, both ways.

    For a broken stream that neither side chose: lawnd sees the connection go, the client's gRPC channel
    sees it too and reconnects through the proxy, which keeps listening.
    """

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self) -> int:
        """Cuts the open connections; returns how many there were."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        return len(sockets) // 2

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # Wakes the accept() thread on Linux.
        except OSError:
            pass
        self._listener.close()
        self.drop()
