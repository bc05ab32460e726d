#!/usr/bin/python3
"""`pip install` of the package into a fresh venv that uses Debian's grpcio and protobuf, then use it.

The package directory and proto/ are copied into a temp tree laid out like the repository, so the build
finds ../../proto as it does in a checkout and leaves nothing behind in the source tree. The venv's Python
then imports lawn with no PYTHONPATH and an empty stub cache: the stubs must come from the install.
"""

import os
import shutil
import subprocess
import tempfile
import textwrap

import support
from support import LawndTestCase

import lawn

STEP_TIMEOUT_S = 120

USE_IT = textwrap.dedent("""
    import os, sys
    import grpc, lawn, lawn.aio, lawn.v1.timer_pb2 as timer_pb2
    venv = sys.prefix
    assert lawn.__file__.startswith(venv), lawn.__file__
    assert timer_pb2.__file__.startswith(venv), timer_pb2.__file__
    assert not grpc.__file__.startswith(venv), "grpc must be Debian's grpcio: " + grpc.__file__
    client = lawn.Client(sys.argv[1])
    client.start("py-install", "i", ttl=0.05, payload=b"installed")
    with client.subscribe("py-install") as expirations:
        exp = next(expirations)
    assert (exp.timer.id, exp.timer.payload) == (b"i", b"installed"), exp
    assert os.listdir(os.environ["LAWN_STUB_CACHE"]) == [], "stubs were generated at import time"
    print("installed lawn works")
""")


class InstallTest(LawndTestCase):

    def run_step(self, args, env=None) -> str:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=STEP_TIMEOUT_S,
                              env=env, cwd=self.tmp, check=False)
        output = done.stdout.decode(errors="replace")
        self.assertEqual(done.returncode, 0, f"{' '.join(args)} failed:\n{output}")
        return output

    def test_pip_install_into_a_venv_with_system_site_packages_then_import_and_use(self):
        with lawn.Client(self.lawnd.address) as client:
            support.wait_serving(client)
        source = os.path.join(support.ARGS.source_dir, "clients", "python")
        tree = os.path.join(self.tmp, "repo")
        shutil.copytree(source, os.path.join(tree, "clients", "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", "v1"))
        shutil.copytree(support.ARGS.proto_dir, os.path.join(tree, "proto"))
        venv = os.path.join(self.tmp, "venv")
        self.run_step(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        # The user's environment, minus what would let the source tree or its cache stand in for the install.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LAWN_PROTO_DIR")}
        env["LAWN_STUB_CACHE"] = tempfile.mkdtemp(dir=self.tmp)
        self.run_step([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-build-isolation",
                       os.path.join(tree, "clients", "python")], env)
        python = os.path.join(venv, "bin", "python")
        self.assertIn("installed lawn works", self.run_step([python, "-c", USE_IT, self.lawnd.address], env))
        quickstart = os.path.join(support.ARGS.source_dir, "examples", "python", "quickstart.py")
        self.assertIn("b'hello'", self.run_step([python, quickstart, self.lawnd.address], env))


if __name__ == "__main__":
    support.main()
