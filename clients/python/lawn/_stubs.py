"""The generated lawn.v1 modules, from the installed package or, in a source tree, from a per-user cache.

An installed package (pip install ./clients/python) carries lawn/v1/timer_pb2*.py, written by setup.py's build
step. A source tree (PYTHONPATH=clients/python) carries none: nothing generated is ever checked in, so it cannot
drift from proto/. There, the first import runs protoc into <cache>/<key>/lawn/v1 and appends <cache>/<key>/lawn
to this package's __path__, which makes `lawn.v1.timer_pb2` importable under the name its generated _grpc
module imports it by. Why a cache rather than a git-ignored directory in the tree: the tree may be read-only
(a CI checkout, a container image), and a key made of the proto's bytes and the compiler's identity means a
changed proto or protoc gets fresh stubs instead of stale ones, with no clean-up step to forget.

The cache is $LAWN_STUB_CACHE, else $XDG_CACHE_HOME/lawn/python-stubs (~/.cache/...), else a 0700 directory of
this user's in the temp dir. Each key's directory is made under a temporary name and renamed into place, so
concurrent first imports (parallel tests) never see a half-written one. $LAWN_PROTO_DIR overrides where proto/
is found (default: the repository root above clients/python).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from lawn import _protoc

_PACKAGE_DIR = Path(__file__).resolve().parent


def _proto_dir() -> Path:
    env = os.environ.get("LAWN_PROTO_DIR")
    return Path(env) if env else _PACKAGE_DIR.parents[2] / "proto"


def _cache_root() -> Path:
    env = os.environ.get("LAWN_STUB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "lawn" / "python-stubs"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    # No writable home (a service account, a container): a private directory in the temp dir. Checked to be
    # ours and private, since other users can create names there.
    root = Path(tempfile.gettempdir()) / f"lawn-python-stubs-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    st = root.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise RuntimeError(f"lawn: {root} is not a private directory of this user; set LAWN_STUB_CACHE")
    return root


def _key(proto: Path) -> str:
    """Changes whenever the proto or the compiler that turns it into Python changes."""
    h = hashlib.sha256(proto.read_bytes())
    for tool in (_protoc.protoc_path(), _protoc.plugin_path()):
        try:
            st = os.stat(tool)
            h.update(f"{tool}:{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            h.update(tool.encode())
    return h.hexdigest()[:24]


def _generated_dir() -> Path:
    """A directory holding lawn/v1/timer_pb2*.py for the source tree's proto, generated if missing."""
    proto_dir = _proto_dir()
    proto = proto_dir / _protoc.TIMER_PROTO
    if not proto.is_file():
        raise ImportError(f"lawn: no generated stubs in {_PACKAGE_DIR} and no {proto} to generate them from; "
                          "install the package (pip install ./clients/python) or set LAWN_PROTO_DIR")
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / _key(proto)
    if (final / "lawn" / "v1" / "timer_pb2_grpc.py").is_file():
        return final
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        _protoc.generate(proto_dir, work)
        try:
            os.rename(work, final)
        except OSError:
            if not (final / "lawn" / "v1" / "timer_pb2_grpc.py").is_file():
                raise  # Not a lost race with another process: a real failure.
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _make_importable() -> None:
    if (_PACKAGE_DIR / "v1" / "timer_pb2_grpc.py").is_file():
        return  # Installed: generated at build time next to this file.
    import lawn  # Partly initialized while it imports us; only its __path__ is needed.

    extra = str(_generated_dir() / "lawn")
    if extra not in lawn.__path__:
        lawn.__path__.append(extra)


_make_importable()

from lawn.v1 import timer_pb2, timer_pb2_grpc  # noqa: E402  (importable only after the step above)

__all__ = ["timer_pb2", "timer_pb2_grpc"]
