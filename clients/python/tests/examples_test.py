#!/usr/bin/python3
"""Runs every examples/python/*.py against a real lawnd, as a user would: address as the first argument."""

import glob
import os
import subprocess
import sys

import support
from support import LawndTestCase

import lawn

EXAMPLE_TIMEOUT_S = 60


class ExamplesTest(LawndTestCase):

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        with lawn.Client(cls.lawnd.address) as client:
            support.wait_serving(client)

    def run_example(self, path: str, *, via_env: bool = False) -> str:
        args = [sys.executable, path] + ([] if via_env else [self.lawnd.address])
        env = dict(os.environ, LAWN_ADDR=self.lawnd.address) if via_env else os.environ
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=EXAMPLE_TIMEOUT_S,
                              env=env, check=False)
        output = done.stdout.decode(errors="replace")
        self.assertEqual(done.returncode, 0, f"{path} failed:\n{output}")
        return output

    def test_every_example_runs_to_completion(self):
        examples = sorted(glob.glob(os.path.join(support.ARGS.source_dir, "examples", "python", "*.py")))
        self.assertGreaterEqual(len(examples), 3, examples)
        for path in examples:
            with self.subTest(example=os.path.basename(path)):
                self.run_example(path)

    def test_the_quickstart_takes_the_address_from_lawn_addr_and_prints_its_timer(self):
        output = self.run_example(os.path.join(support.ARGS.source_dir, "examples", "python", "quickstart.py"),
                                  via_env=True)
        self.assertIn("b'hello' b'hi'", output)


if __name__ == "__main__":
    support.main()
