#!/usr/bin/python3
"""Stub generation from a source tree: into the cache on first import, atomically, keyed by the proto.

No lawnd: each case imports lawn in fresh interpreters with PYTHONPATH=clients/python and an empty
LAWN_STUB_CACHE, so nothing of this process's own import is reused.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

IMPORT = ("import grpc, lawn, lawn.v1.timer_pb2 as t; "
          "assert grpc.__file__.startswith('/usr/lib/python3/'), grpc.__file__; print(t.__file__)")


class StubsTest(unittest.TestCase):

    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="lawn-pystubs-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.cache = os.path.join(self.tmp, "cache")
        self.package_root = os.path.join(support.ARGS.source_dir, "clients", "python")

    def start_import(self, proto_dir: str) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=self.package_root, LAWN_STUB_CACHE=self.cache, LAWN_PROTO_DIR=proto_dir)
        return subprocess.Popen([sys.executable, "-c", IMPORT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=self.tmp)

    def imported_from(self, procs) -> set:
        files = set()
        for p in procs:
            out, _ = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out.decode(errors="replace"))
            files.add(out.decode().strip())
        return files

    def test_concurrent_first_imports_share_one_complete_generated_directory(self):
        files = self.imported_from([self.start_import(support.ARGS.proto_dir) for _ in range(4)])
        self.assertEqual(len(files), 1, files)
        self.assertTrue(next(iter(files)).startswith(self.cache))
        self.assertEqual([n for n in os.listdir(self.cache) if n.startswith(".tmp-")], [])  # No leftovers.

    def test_a_changed_proto_gets_fresh_stubs_beside_the_old_ones(self):
        first = self.imported_from([self.start_import(support.ARGS.proto_dir)])
        changed = os.path.join(self.tmp, "proto")
        shutil.copytree(support.ARGS.proto_dir, changed)
        with open(os.path.join(changed, "lawn", "v1", "timer.proto"), "a") as f:
            f.write("\n// changed\n")
        second = self.imported_from([self.start_import(changed)])
        self.assertNotEqual(first, second)
        self.assertEqual(len(os.listdir(self.cache)), 2)


if __name__ == "__main__":
    support.main()
