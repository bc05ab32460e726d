"""Runs protoc + grpc_python_plugin on proto/lawn/v1/timer.proto; standard library only.

setup.py loads this file by path (before the package, and grpcio, can be imported) to generate the stubs into
the build directory at install time; lawn._stubs uses it to generate them into a cache from a source tree.
Keeping one generator means an installed package and a source tree cannot disagree on how stubs are made.

The stubs are generated with `-I <proto dir>`, so their module names follow the proto path: `lawn.v1.timer_pb2`
and `lawn.v1.timer_pb2_grpc`, a subpackage of this package and never a top-level `grpc` module that would
shadow grpcio.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# The proto file, relative to the proto directory; also the layout of what protoc writes.
TIMER_PROTO = "lawn/v1/timer.proto"


def protoc_path() -> str:
    """$LAWN_PROTOC, else protoc on PATH, else Debian's /usr/bin/protoc (protobuf-compiler)."""
    return os.environ.get("LAWN_PROTOC") or shutil.which("protoc") or "/usr/bin/protoc"


def plugin_path() -> str:
    """$LAWN_GRPC_PYTHON_PLUGIN, else Debian's grpc_python_plugin (protobuf-compiler-grpc).

    Not grpc_tools: Debian's python3-grpc-tools is far older than its grpcio.
    """
    return (os.environ.get("LAWN_GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
            or "/usr/bin/grpc_python_plugin")


def generate(proto_dir: Path, out_dir: Path) -> None:
    """Writes out_dir/lawn/v1/{__init__,timer_pb2,timer_pb2_grpc}.py from proto_dir/lawn/v1/timer.proto.

    out_dir/lawn itself gets no __init__.py: it is either the build copy of this package (which has one) or a
    directory that lawn._stubs appends to the package's __path__. Raises RuntimeError naming the command and
    protoc's output when protoc fails or is missing.
    """
    proto = Path(proto_dir) / TIMER_PROTO
    if not proto.is_file():
        raise RuntimeError(f"lawn: {proto} not found; set LAWN_PROTO_DIR to the repository's proto/ directory")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [protoc_path(), f"-I{proto_dir}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
           f"--plugin=protoc-gen-grpc_python={plugin_path()}", str(proto)]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)
    except OSError as e:
        raise RuntimeError(f"lawn: cannot run {cmd[0]} ({e}); install protobuf-compiler and "
                           "protobuf-compiler-grpc") from e
    if done.returncode != 0:
        raise RuntimeError(f"lawn: protoc failed ({done.returncode}): {' '.join(cmd)}\n"
                           + done.stdout.decode(errors="replace"))
    (out_dir / "lawn" / "v1" / "__init__.py").touch()
