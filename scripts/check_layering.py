#!/usr/bin/env python3
"""Checks the workspace's layering (layering.toml) on `cargo metadata`.

Usage:
    python3 scripts/check_layering.py                  # runs cargo metadata --locked
    python3 scripts/check_layering.py metadata.json    # reads cargo metadata's JSON
    python3 scripts/check_layering.py --rules other.toml [metadata.json]

Exits 1 with one line per violation, 0 with a one-line summary. Only normal and build
dependencies are followed (`deps[].dep_kinds[].kind` null or "build"); dev-dependencies
never reach a crate's users. `check(metadata, rules)` works on plain dicts, for the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = "layering.toml"
ARROW = " → "


def load_rules(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def cargo_metadata(root: Path) -> dict:
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        cwd=root,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    return json.loads(out)


def _runtime_deps(node: dict) -> list[str]:
    """The ids a resolve node depends on through a normal or build dependency."""
    return [
        dep["pkg"]
        for dep in node.get("deps", [])
        if any(kind.get("kind") in (None, "build") for kind in dep.get("dep_kinds", []))
    ]


def _reaching(start: str, graph: dict, names: dict, bad, enter_not) -> list[tuple[str, str]]:
    """The paths (shown as `a → b → c`) from `start` to each package whose name is `bad`,
    breadth first through normal and build edges; a bad package ends its path, and packages
    for which `enter_not` holds are not walked into."""
    found = []
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for dep in graph.get(current, []):
            if dep in parent:
                continue
            parent[dep] = current
            dep_name = names[dep]
            if bad(dep_name):
                path = [dep]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                found.append((ARROW.join(names[i] for i in reversed(path)), dep_name))
                continue
            if enter_not(dep_name):
                continue
            queue.append(dep)
    return found


def check(metadata: dict, rules: dict) -> tuple[list[str], str]:
    """Returns (violations, summary) for cargo metadata's JSON and the rules' TOML, as dicts."""
    names = {p["id"]: p["name"] for p in metadata["packages"]}
    members = {names[i] for i in metadata["workspace_members"]}
    graph = {n["id"]: _runtime_deps(n) for n in metadata["resolve"]["nodes"]}
    by_name = {names[i]: i for i in metadata["workspace_members"]}

    domains = set(rules.get("domains", {}).get("crates", []))
    adapters = set(rules.get("adapters", {}).get("crates", []))
    apps = set(rules.get("apps", {}).get("crates", []))
    wire = set(rules.get("wire", {}).get("crates", []))
    examples = set(rules.get("examples", {}).get("crates", []))
    composition = set(rules.get("composition", {}).get("crates", []))
    composition_forbidden = set(rules.get("composition", {}).get("forbidden", ["actix-web"]))
    example_forbidden = set(rules.get("examples", {}).get("forbidden", []))
    forbidden = set(rules.get("forbidden_in_domains", {}))
    adapter_edges = {(e["from"], e["to"]) for e in rules.get("allowed_adapter_edge", [])}
    app_edges = {(e["from"], e["to"]) for e in rules.get("allowed_app_edge", [])}

    errors: list[str] = []

    # (d) Every workspace member in exactly one class; no stale entries.
    for name in sorted(members - domains - wire - adapters - apps - examples - composition):
        errors.append(
            f"{name}: workspace member not classified; list it under [domains], [wire], "
            f"[adapters], [composition], [apps] or [examples] in layering.toml"
        )
    classes = (("domains", domains), ("wire", wire), ("adapters", adapters),
               ("composition", composition), ("apps", apps), ("examples", examples))
    for i, (a_label, a) in enumerate(classes):
        for b_label, b in classes[i + 1:]:
            for name in sorted(a & b):
                errors.append(f"{name}: listed under both {a_label} and {b_label} in layering.toml")
    for name in sorted((domains | wire | adapters | composition | apps | examples) - members):
        errors.append(f"{name}: listed in layering.toml but not a workspace member; remove it")

    # (a) A domain's tree: no forbidden package, no adapter, no wire crate, no app. The walk goes through
    # third-party crates; it does not enter other domains (each is checked from its own root,
    # so a violation is reported once, by the domain that has it) and stops at a violation.
    # (f) A wire crate (the HTTP surfaces' JSON shapes) stands on the domains alone: the
    # domains' forbidden packages (the HTTP framework first), adapters and apps are out of
    # its tree. Domains are not walked into: each is checked from its own root.
    inward = (
        ("a domain crate", domains, (("an adapter", adapters), ("a wire crate", wire),
                                     ("an app", apps))),
        ("a wire crate", wire, (("an adapter", adapters), ("an app", apps))),
    )
    for kind, roots, classes in inward:
        def bad(n, classes=classes):
            return n in forbidden or any(n in crates for _, crates in classes)

        for root in sorted(roots & members):
            for path, dep_name in _reaching(by_name[root], graph, names, bad,
                                            lambda n: (n in domains or n in wire) and n in members):
                if dep_name in forbidden:
                    why = f"{kind} may not depend on {dep_name}"
                else:
                    what = next(label for label, crates in classes if dep_name in crates)
                    why = f"{kind} may not depend on {what} ({dep_name})"
                errors.append(f"{path}: {why} (layering.toml)")

    # (e) An example embeds domains and adapters the way another team's service would: its
    # whole tree must stay clear of what it proves it can do without (the HTTP framework).
    for example in sorted(examples & members):
        for path, dep_name in _reaching(by_name[example], graph, names,
                                        lambda n: n in example_forbidden, lambda n: False):
            errors.append(
                f"{path}: an example may not depend on {dep_name} ([examples] in layering.toml)"
            )

    # (g) A composition crate (settings and wiring shared by the apps) sits below the apps and
    # apart from the HTTP framework: no app and no package of its `forbidden` list (default
    # actix-web) anywhere in its tree.
    for crate in sorted(composition & members):
        for path, dep_name in _reaching(by_name[crate], graph, names,
                                        lambda n: n in apps or n in composition_forbidden,
                                        lambda n: False):
            what = f"an app ({dep_name})" if dep_name in apps else dep_name
            errors.append(
                f"{path}: a composition crate may not depend on {what} "
                f"([composition] in layering.toml)"
            )

    # (b), (c) Direct edges between workspace members.
    present_edges = set()
    for member in sorted(members):
        for dep in graph.get(by_name[member], []):
            dep_name = names[dep]
            if dep_name not in members or dep_name == member:
                continue
            present_edges.add((member, dep_name))
            if member in adapters and dep_name in adapters and (member, dep_name) not in adapter_edges:
                errors.append(
                    f"{member}{ARROW}{dep_name}: an adapter may not depend on another adapter "
                    f"unless the edge is listed in [[allowed_adapter_edge]] with its reason "
                    f"(layering.toml)"
                )
            if dep_name in apps and member not in domains and member not in composition:
                if member not in apps:
                    errors.append(
                        f"{member}{ARROW}{dep_name}: nothing may depend on an app (layering.toml)"
                    )
                elif (member, dep_name) not in app_edges:
                    errors.append(
                        f"{member}{ARROW}{dep_name}: an app may not depend on another app "
                        f"unless the edge is listed in [[allowed_app_edge]] (layering.toml)"
                    )

    # Exceptions that no longer exist would hide a future edge's review.
    for table, edges in (("allowed_adapter_edge", adapter_edges), ("allowed_app_edge", app_edges)):
        for a, b in sorted(edges - present_edges):
            errors.append(
                f"{a}{ARROW}{b}: listed in [[{table}]] but no longer a dependency; remove it "
                f"from layering.toml"
            )

    summary = (
        f"layering: ok ({len(domains)} domains reach none of {len(forbidden)} forbidden "
        f"packages nor any adapter, wire crate or app; {len(wire)} wire crates on domains "
        f"alone; {len(adapters)} adapters with "
        f"{len(adapter_edges)} allowed adapter edges; {len(composition)} composition crates "
        f"clear of apps and {len(composition_forbidden)} packages; {len(apps)} apps; "
        f"{len(examples)} examples clear of {len(example_forbidden)} packages; "
        f"{len(members)} workspace members classified)"
    )
    return errors, summary


def main(argv: list[str]) -> int:
    args = list(argv)
    rules_path = ROOT / RULES
    if "--rules" in args:
        i = args.index("--rules")
        rules_path = Path(args[i + 1])
        del args[i : i + 2]
    if len(args) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    if args:
        with open(args[0], encoding="utf-8") as f:
            metadata = json.load(f)
    else:
        try:
            metadata = cargo_metadata(ROOT)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"layering: cargo metadata failed: {e}", file=sys.stderr)
            return 1
    errors, summary = check(metadata, load_rules(rules_path))
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        print(f"layering: {len(errors)} violation(s) of {rules_path.name}", file=sys.stderr)
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
