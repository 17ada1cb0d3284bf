"""The test floor: a binary that runs fewer tests, more, or none fails the check.

    python3 -m unittest discover -s .ci
"""

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(__file__))
import floor  # noqa: E402

ARTIFACTS = [
    {"reason": "compiler-artifact", "package_id": "path+file:///w/crates/volley#0.1.0",
     "target": {"kind": ["test"], "name": "server"}, "profile": {"test": True},
     "executable": "/w/target/debug/deps/server-aaaa"},
    {"reason": "compiler-artifact", "package_id": "path+file:///w/examples/realtime#realtime@0.1.0",
     "target": {"kind": ["test"], "name": "server"}, "profile": {"test": True},
     "executable": "/w/target/debug/deps/server-bbbb"},
    {"reason": "compiler-artifact", "package_id": "path+file:///w/crates/volley#0.1.0",
     "target": {"kind": ["bin"], "name": "volley"}, "profile": {"test": False},
     "executable": "/w/target/debug/volley"},
]

LOG = """\
     Running tests/server.rs (target/debug/deps/server-aaaa)
running 3 tests
test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
     Running tests/server.rs (target/debug/deps/server-bbbb)
running 2 tests
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
   Doc-tests volley
running 1 test
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""


class Floor(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.artifacts = self.file("artifacts", "".join(json.dumps(a) + "\n" for a in ARTIFACTS))
        self.log = self.file("log", LOG)
        self.loom = self.file("loom", "# loom\ntest result: ok. 5 passed; 0 failed; 0 ignored\n")

    def tearDown(self):
        self.dir.cleanup()

    def file(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, floor_text, *logs):
        path = self.file("floor", floor_text)
        out = io.StringIO()
        with redirect_stdout(out):
            code = floor.main(["floor.py", "check", path, self.artifacts, *(logs or (self.log, self.loom))])
        return code, out.getvalue()

    def test_two_tests_named_alike_in_two_packages_are_told_apart(self):
        code, out = self.check("volley/test/server 3\nrealtime/test/server 2\nvolley/doc 1\nloom 5\n")
        self.assertEqual(code, 0, out)

    def test_fewer_more_none_and_unknown_each_fail(self):
        for text, says in (
            ("volley/test/server 4\nrealtime/test/server 2\nvolley/doc 1\nloom 5\n", "fewer than its floor"),
            ("volley/test/server 2\nrealtime/test/server 2\nvolley/doc 1\nloom 5\n", "raise the floor to 3"),
            ("volley/test/server 3\nrealtime/test/server 2\nvolley/doc 1\nloom 5\nvolley/test/gone 1\n", "ran no test"),
            ("volley/test/server 3\nvolley/doc 1\nloom 5\n", "has no line"),
        ):
            code, out = self.check(text)
            self.assertEqual(code, 1, text)
            self.assertIn(says, out)

    def test_a_loom_filter_that_matches_nothing_fails(self):
        empty = self.file("loom0", "# loom\ntest result: ok. 0 passed; 0 failed; 0 ignored; 22 filtered out\n")
        code, out = self.check("volley/test/server 3\nrealtime/test/server 2\nvolley/doc 1\nloom 5\n", self.log, empty)
        self.assertEqual(code, 1)
        self.assertIn("loom: ran 0 tests", out)


if __name__ == "__main__":
    unittest.main()
