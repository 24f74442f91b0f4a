"""Self-test of check_import_cycles.py on small crates written to a temporary directory.

Run: python3 -m unittest discover -s scripts -p 'test_*.py'
"""

from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_import_cycles import ROOT, check, cycles, use_paths, workspace_graph  # noqa: E402


def crate(files: dict[str, str]) -> dict[str, set[str]]:
    """The file graph of one crate `crates/demo` made of `files` (paths under src/)."""
    with tempfile.TemporaryDirectory() as root:
        base = Path(root) / "crates" / "demo"
        (base / "src").mkdir(parents=True)
        (base / "Cargo.toml").write_text('[package]\nname = "demo"\n')
        for name, text in files.items():
            path = base / "src" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        graph = workspace_graph(Path(root))
    return {
        source.removeprefix("crates/demo/src/"): {t.removeprefix("crates/demo/src/") for t in targets}
        for source, targets in graph.items()
    }


class UseTrees(unittest.TestCase):
    def test_nested_groups_aliases_and_self_expand(self):
        paths = use_paths("crate::{a::{B, c::D as E}, f, g::{self, H}}")
        self.assertEqual(
            paths,
            [
                (["crate", "a", "B"], "B"),
                (["crate", "a", "c", "D"], "E"),
                (["crate", "f"], "f"),
                (["crate", "g"], "g"),
                (["crate", "g", "H"], "H"),
            ],
        )

    def test_names_holding_as_are_not_aliases(self):
        paths = use_paths("crate::routes::{datasets, base as Basis}")
        self.assertEqual(
            paths,
            [(["crate", "routes", "datasets"], "datasets"), (["crate", "routes", "base"], "Basis")],
        )


class Graph(unittest.TestCase):
    def test_two_files_that_use_each_other_are_a_cycle(self):
        graph = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::Thing;\npub struct Other;\n",
            "b.rs": "pub struct Thing;\nfn f() -> super::a::Other { todo!() }\n",
        })
        self.assertEqual(graph["a.rs"], {"b.rs"})
        self.assertEqual(graph["b.rs"], {"a.rs"})
        self.assertEqual(cycles(graph), [["a.rs", "b.rs"]])

    def test_root_reexports_are_followed_to_the_defining_file(self):
        graph = crate({
            "lib.rs": "mod a;\nmod b;\npub use a::Thing;\npub use b::*;\n",
            "a.rs": "use crate::Other;\npub struct Thing;\n",
            "b.rs": "use crate::Thing;\npub struct Other;\n",
        })
        # lib.rs only hands names on; a and b use each other through it.
        self.assertEqual(graph["lib.rs"], set())
        self.assertEqual(cycles(graph), [["a.rs", "b.rs"]])

    def test_unit_tests_comments_strings_and_mod_lines_are_no_imports(self):
        graph = crate({
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": (
                "use crate::b::Thing;\n"
                "// use crate::b::Other is not an import\n"
                "#[cfg(test)]\nmod tests {\n    use crate::b::Other;\n}\n"
            ),
            "b.rs": (
                "pub struct Thing;\n"
                'const S: &str = "crate::a::x";\n'
                "#[cfg(test)]\nmod tests {\n    use super::super::a;\n}\n"
            ),
        })
        self.assertEqual(graph["a.rs"], {"b.rs"})
        self.assertEqual(graph["b.rs"], set())
        self.assertEqual(cycles(graph), [])

    def test_inline_modules_resolve_super_to_their_own_file(self):
        graph = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "mod inner {\n    use super::Here;\n    use crate::b::There;\n}\npub struct Here;\n",
            "b.rs": "pub struct There;\n",
        })
        self.assertEqual(graph["a.rs"], {"b.rs"})

    def test_folder_modules_and_nested_files(self):
        graph = crate({
            "lib.rs": "mod x;\n",
            "x/mod.rs": "mod y;\npub use y::Y;\npub struct X;\n",
            "x/y.rs": "use super::X;\npub struct Y;\n",
        })
        self.assertEqual(graph["x/y.rs"], {"x/mod.rs"})
        self.assertEqual(cycles(graph), [])


class Allowance(unittest.TestCase):
    def test_a_new_cycle_and_a_stale_allowance_are_problems(self):
        found = [["a.rs", "b.rs"], ["c.rs", "d.rs"]]
        self.assertEqual(check(found, [{"a.rs", "b.rs"}, {"c.rs", "d.rs"}]), [])
        problems = check(found, [{"a.rs", "b.rs"}, {"e.rs", "f.rs"}])
        self.assertEqual(len(problems), 2)
        self.assertIn("new import cycle of 2 files: c.rs d.rs", problems[0])
        self.assertIn("no longer as listed", problems[1])

    def test_the_workspace_has_no_cycle_beyond_those_listed(self):
        from check_import_cycles import ALLOWED, read_allowed

        self.assertEqual(check(cycles(workspace_graph(ROOT)), read_allowed(ROOT / ALLOWED)), [])


if __name__ == "__main__":
    unittest.main()
