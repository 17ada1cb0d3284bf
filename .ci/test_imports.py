"""The import-loop check: a loop between two files is found, a child using its parent is one
too, and test modules and `mod` declarations are not uses.

    python3 -m unittest discover -s .ci
"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(__file__))
import imports  # noqa: E402


def workspace(files):
    """A workspace with one crate, `crates/demo`, holding `files` (path under src: text)."""
    root = tempfile.mkdtemp()
    crate = os.path.join(root, "crates", "demo")
    for path, text in {"Cargo.toml": "[package]\nname = \"demo\"\n", **{f"src/{p}": t for p, t in files.items()}}.items():
        full = os.path.join(crate, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return root


def check(root, ceiling):
    out = io.StringIO()
    with redirect_stdout(out):
        code = imports.main(["--root", root, "--no-reexports", "--check", str(ceiling)])
    return code, out.getvalue()


class Loops(unittest.TestCase):
    def test_two_files_that_use_each_other_are_a_loop(self):
        root = workspace({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\npub fn f() -> crate::a::A { crate::a::A }\n",
        })
        code, out = check(root, 0)
        self.assertEqual(code, 1, out)
        self.assertIn("files in loops: 2, loops: 1", out)
        self.assertEqual(check(root, 2)[0], 0)

    def test_a_child_calling_its_parent_that_calls_it_is_a_loop(self):
        root = workspace({
            "lib.rs": "mod server;\n",
            "server/mod.rs": "mod worker;\npub enum Control { Stop }\npub fn run() { worker::spawn() }\n",
            "server/worker.rs": "use super::Control;\npub fn spawn() { let _ = Control::Stop; }\n",
        })
        code, out = check(root, 0)
        self.assertEqual(code, 1, out)
        self.assertIn("files in loops: 2", out)

    def test_declarations_and_test_modules_are_no_uses(self):
        root = workspace({
            "lib.rs": "mod a;\nmod b;\npub use a::A;\n",
            "a.rs": "use crate::b::B;\npub struct A(B);\n",
            "b.rs": "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n    use super::*;\n}\n",
        })
        code, out = check(root, 0)
        self.assertEqual(code, 0, out)
        self.assertIn("files in loops: 0", out)


if __name__ == "__main__":
    unittest.main()
