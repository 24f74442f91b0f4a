#!/usr/bin/env python3
"""Checks that no Rust file of the workspace imports itself through others (issue 65).

Usage:
    python3 scripts/check_import_cycles.py            # the workspace, against import_cycles.allowed
    python3 scripts/check_import_cycles.py --list     # every cycle found, one line each

A file imports another when a `use` (or a path written in code: `crate::…`, `super::…`,
`self::…`) of one crate's module names the other's module; a name re-exported with
`pub use` is followed to the module that defines it, so using a crate's root re-exports is
no import of the root. `mod` declarations are not imports. Cycles are the strongly
connected groups of that graph. `import_cycles.allowed` lists the cycles the workspace
still has, one line of files each; the check fails on a cycle not within one listed (a new
one) and on a listed one that is gone (so the list shrinks as cycles are broken). Exits 1
with one line per problem, 0 with a one-line summary. `graph(files)` and `cycles(graph)`
work on plain dicts, for the tests.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = "import_cycles.allowed"
CRATE_DIRS = ("apps", "crates", "examples")

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STRING = re.compile(r'r#*"(?:.|\n)*?"#*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'')
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')
USE = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
QUALIFIED = re.compile(r"\b((?:crate|super|self)(?:::\w+)+)")


def strip(text: str) -> str:
    """The code without comments and string literals (a `use` in a doc line is no import)."""
    text = STRING.sub('""', text)
    return COMMENT.sub(" ", text)


def use_paths(tree: str) -> list[tuple[list[str], str]]:
    """A use tree expanded: each (path, local name) it brings in; `*` and `self` kept."""
    # `as` is a word between spaces; mark it before the spaces go, or `datasets` reads as an alias.
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    out: list[tuple[list[str], str]] = []

    def walk(prefix: list[str], part: str) -> None:
        brace = part.find("{")
        if brace == -1:
            name, _, alias = part.partition("@")
            segments = [s for s in name.split("::") if s]
            if not segments:
                return
            if segments[-1] == "self":
                segments = segments[:-1]
            full = prefix + segments
            if full:
                out.append((full, alias or full[-1]))
            return
        head = [s for s in part[:brace].split("::") if s]
        inner = part[brace + 1 : part.rfind("}")]
        depth, start = 0, 0
        for at, char in enumerate(inner):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            elif char == "," and depth == 0:
                walk(prefix + head, inner[start:at])
                start = at + 1
        walk(prefix + head, inner[start:])

    walk([], tree)
    return out


INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{")


def inline_modules(text: str) -> list[tuple[str, str, str]]:
    """The text outside inline `mod name { … }` blocks, and each block as (name, inside,
    its own outside text) one level down; blocks within blocks come back from the recursion."""
    blocks = []
    outside = []
    at = 0
    while True:
        match = INLINE_MOD.search(text, at)
        if match is None:
            outside.append(text[at:])
            break
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    break
        outside.append(text[at : match.start()])
        blocks.append((match.group(1), text[match.end() : end]))
        at = end + 1
    return "".join(outside), blocks


def definitions(text: str, name: str) -> bool:
    """Whether the code defines `name` at some level (a glob re-export's candidate)."""
    pattern = rf"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+{re.escape(name)}\b"
    return re.search(pattern, text) is not None


class Crate:
    """One crate's modules: module path (a tuple) → file, and each file's stripped code."""

    def __init__(self, root_file: Path):
        self.files: dict[tuple[str, ...], Path] = {}
        self.code: dict[Path, str] = {}
        self._add((), root_file, root_file.parent)

    def _add(self, module: tuple[str, ...], file: Path, children_dir: Path) -> None:
        if not file.is_file() or file in self.code:
            return
        self.files[module] = file
        text = strip(file.read_text(encoding="utf-8", errors="replace"))
        self.code[file] = text
        custom = {name: path for path, name in PATH_ATTR.findall(text)}
        for name in MOD.findall(text):
            if name in custom:
                child = file.parent / custom[name]
                self._add(module + (name,), child, child.parent / child.stem)
                continue
            for child in (children_dir / f"{name}.rs", children_dir / name / "mod.rs"):
                if child.is_file():
                    below = child.parent if child.name == "mod.rs" else child.with_suffix("")
                    self._add(module + (name,), child, below)
                    break

    def file_of(self, module: tuple[str, ...]) -> Path:
        """The file a module is written in: an inline module's is its enclosing one's."""
        while module not in self.files:
            module = module[:-1]
        return self.files[module]

    def module_of(self, file: Path) -> tuple[str, ...]:
        return next(module for module, f in self.files.items() if f == file)

    def reexports(self, module: tuple[str, ...]) -> tuple[dict[str, list[str]], list[list[str]]]:
        """What a module re-exports with `pub use`: names with the paths they name, and the
        paths of its glob re-exports."""
        named: dict[str, list[str]] = {}
        globs: list[list[str]] = []
        if module not in self.files:
            return named, globs
        for public, tree in USE.findall(self.code[self.files[module]]):
            if public:
                for path, name in use_paths(tree):
                    if path[-1] == "*":
                        globs.append(path[:-1])
                    else:
                        named[name] = path
        return named, globs

    def resolve(self, here: tuple[str, ...], path: list[str], seen: int = 0) -> Path | None:
        """The file of the module a path (as written in module `here`) ends in, following
        re-exports; `None` for paths into other crates."""
        if not path or seen > 8:
            return None
        first, rest = path[0], path[1:]
        if first == "crate":
            module: tuple[str, ...] = ()
        elif first == "self":
            module = here
        elif first == "super":
            module = here[:-1]
            while rest and rest[0] == "super":
                module, rest = module[:-1], rest[1:]
        elif (here + (first,)) in self.files:
            module, rest = here + (first,), rest
        else:
            return None
        while rest and module + (rest[0],) in self.files:
            module, rest = module + (rest[0],), rest[1:]
        if rest and rest[0] != "*" and seen < 8:
            named, globs = self.reexports(module)
            target = named.get(rest[0])
            if target is not None:
                further = self.resolve(module, target + rest[1:], seen + 1)
                if further is not None:
                    return further
            for glob in globs:
                source = self.resolve(module, glob + ["*"], seen + 1)
                if source is not None and definitions(self.code[source], rest[0]):
                    return self.resolve(module, glob + rest, seen + 1) or source
        return self.file_of(module)

    def paths_in(self, text: str, module: tuple[str, ...]) -> list[tuple[tuple[str, ...], list[str]]]:
        """Every path a module's text names, with the (possibly inline) module it is in."""
        outside, blocks = inline_modules(text)
        # A `pub use` hands names on (its users are resolved through it): no import.
        found = [
            (module, path)
            for public, tree in USE.findall(outside)
            if not public
            for path, _ in use_paths(tree)
        ]
        without_uses = USE.sub(" ", outside)
        found += [(module, match.split("::")) for match in QUALIFIED.findall(without_uses)]
        for name, inside in blocks:
            # Unit tests are no part of the design (fixtures shared between files' tests
            # would tie them otherwise).
            if name != "tests":
                found += self.paths_in(inside, module + (name,))
        return found

    def edges(self) -> dict[Path, set[Path]]:
        graph: dict[Path, set[Path]] = {file: set() for file in self.code}
        for file, text in self.code.items():
            for module, path in self.paths_in(text, self.module_of(file)):
                target = self.resolve(module, path)
                if target is not None and target != file:
                    graph[file].add(target)
        return graph


def workspace_graph(root: Path) -> dict[str, set[str]]:
    """Every crate's file graph, paths relative to `root`."""
    graph: dict[str, set[str]] = {}
    for top in CRATE_DIRS:
        for manifest in sorted((root / top).glob("*/Cargo.toml")):
            for entry in ("src/lib.rs", "src/main.rs"):
                file = manifest.parent / entry
                if not file.is_file():
                    continue
                for source, targets in Crate(file).edges().items():
                    key = str(source.relative_to(root))
                    graph.setdefault(key, set()).update(str(t.relative_to(root)) for t in targets)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file, each sorted (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def read_allowed(path: Path) -> list[set[str]]:
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    return [set(line.split()) for line in lines if line.strip() and not line.startswith("#")]


def check(found: list[list[str]], allowed: list[set[str]]) -> list[str]:
    """Problems: a cycle within no allowed group, and an allowed group no cycle fills."""
    problems = []
    for group in found:
        if not any(set(group) <= allowance for allowance in allowed):
            problems.append(f"new import cycle of {len(group)} files: {' '.join(group)}")
    for allowance in allowed:
        if not any(set(group) == allowance for group in found):
            problems.append(
                f"{ALLOWED} lists a cycle that is no longer as listed (remove or shrink it): "
                + " ".join(sorted(allowance))
            )
    return problems


def main() -> None:
    found = cycles(workspace_graph(ROOT))
    if "--list" in sys.argv[1:]:
        for group in found:
            print(" ".join(group))
        return
    problems = check(found, read_allowed(ROOT / ALLOWED))
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    files = sum(len(group) for group in found)
    print(f"import cycles: none new ({len(found)} listed in {ALLOWED}, {files} files)")


if __name__ == "__main__":
    main()
