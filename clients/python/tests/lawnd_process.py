"""A lawnd child process for the client tests: port 0 on the first start, the same port on a restart.

Stopped with SIGTERM by its own PID (never by name); SIGKILL only for this child, and only when it ignores
SIGTERM. Its merged stdout/stderr is collected so failures can show lawnd's log.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from typing import List, Optional, Sequence

STARTUP_TIMEOUT_S = 30
STOP_TIMEOUT_S = 30

_LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


class Lawnd:
    def __init__(self, lawnd_path: str, data_dir: str, extra_args: Sequence[str] = ()) -> None:
        self._path = lawnd_path
        self._data_dir = data_dir
        self._extra = list(extra_args)
        self._lines: List[str] = []
        self._lock = threading.Lock()
        self.port: Optional[int] = None
        self.proc: Optional[subprocess.Popen] = None
        self.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Spawns lawnd (on the port it had, if it ran before) and waits until it logs that it listens."""
        listen = f"127.0.0.1:{self.port or 0}"
        self.proc = subprocess.Popen(
            [self._path, "--listen", listen, "--data-dir", self._data_dir, "--metrics-listen", "",
             "--shards", "2"] + self._extra,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        found = threading.Event()
        reader = threading.Thread(target=self._read, args=(self.proc, found), daemon=True)
        reader.start()
        self._reader = reader
        found.wait(STARTUP_TIMEOUT_S)
        if self.port is None or self.proc.poll() is not None:
            raise RuntimeError(f"lawnd did not start (exit status {self.proc.poll()}); log:\n{self.log()}")

    def _read(self, proc: subprocess.Popen, found: threading.Event) -> None:
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            with self._lock:
                self._lines.append(line)
            m = _LISTENING.search(line)
            if m and not found.is_set():
                self.port = int(m.group(1))
                found.set()
        found.set()  # EOF: lawnd exited; wake the waiter so it can say so.

    def log(self) -> str:
        with self._lock:
            return "".join(self._lines)

    def stop(self) -> None:
        """SIGTERM to this child; raises unless it exits 0 within STOP_TIMEOUT_S."""
        proc = self.proc
        if proc is None:
            return
        self.proc = None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"lawnd ignored SIGTERM for {STOP_TIMEOUT_S} s; log:\n{self.log()}")
        self._reader.join(timeout=5)
        proc.stdout.close()
        if proc.returncode != 0:
            raise RuntimeError(f"lawnd exited with status {proc.returncode}; log:\n{self.log()}")
