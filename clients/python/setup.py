"""Builds the lawn package, generating lawn/v1/timer_pb2*.py from proto/ into the build directory.

The proto directory is $LAWN_PROTO_DIR, else ../../proto (the repository this directory sits in; pip builds
in place). Generation is lawn/_protoc.py, loaded by path because the package itself cannot be imported before
its stubs exist.
"""

import importlib.util
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _load_protoc():
    spec = importlib.util.spec_from_file_location("lawn_protoc", HERE / "lawn" / "_protoc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithStubs(build_py):
    """build_py, then protoc + grpc_python_plugin into the same build tree (lawn/v1/)."""

    def run(self):
        super().run()
        proto_dir = Path(os.environ.get("LAWN_PROTO_DIR") or HERE.parent.parent / "proto")
        _load_protoc().generate(proto_dir, Path(self.build_lib))

    def get_outputs(self, include_bytecode=True):
        v1 = Path(self.build_lib) / "lawn" / "v1"
        generated = [str(v1 / n) for n in ("__init__.py", "timer_pb2.py", "timer_pb2_grpc.py")]
        return super().get_outputs(include_bytecode) + generated


setup(cmdclass={"build_py": BuildPyWithStubs})
