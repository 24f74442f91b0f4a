"""Summarise a `cargo build --timings` report: wall time, the CPU time of all units, and the
units that cost the most, so a cold build's figures can be read (and compared) as text.

    python3 scripts/build_timings.py target/cargo-timings/cargo-timing.html [--top 15]

The report is the HTML cargo writes; its data is the JSON array after `const UNIT_DATA =`.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass

UNIT_DATA = re.compile(r"const UNIT_DATA = (\[.*?\]);\s*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Unit:
    name: str
    version: str
    mode: str
    target: str
    start: float
    duration: float


def units(html: str) -> list[Unit]:
    """The compilation units of a cargo timings report."""
    match = UNIT_DATA.search(html)
    if match is None:
        raise ValueError("no `const UNIT_DATA = [...]` in the report: is it cargo's --timings HTML?")
    return [
        Unit(
            name=u["name"],
            version=u["version"],
            mode=u["mode"],
            target=u.get("target", "").strip(),
            start=float(u["start"]),
            duration=float(u["duration"]),
        )
        for u in json.loads(match.group(1))
    ]


def summary(all_units: list[Unit], top: int) -> str:
    if not all_units:
        return "no units"
    wall = max(u.start + u.duration for u in all_units)
    cpu = sum(u.duration for u in all_units)
    lines = [
        f"{len(all_units)} units, wall {wall / 60:.1f} min, {cpu:.0f} s of compilation summed "
        f"({cpu / wall:.2f} units at a time on average)",
        f"{'seconds':>8}  {'share':>6}  unit",
    ]
    by_cost = sorted(all_units, key=lambda u: u.duration, reverse=True)
    for u in by_cost[:top]:
        what = f"{u.name} {u.version}"
        if u.target:
            what += f" ({u.target})"
        if u.mode != "todo" and u.mode != "build":
            what += f" [{u.mode}]"
        lines.append(f"{u.duration:8.1f}  {u.duration / cpu:6.1%}  {what}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="cargo's --timings HTML report")
    parser.add_argument("--top", type=int, default=15, help="how many of the costliest units to list")
    args = parser.parse_args(argv)
    try:
        with open(args.report, encoding="utf-8") as f:
            parsed = units(f.read())
    except (OSError, ValueError) as e:
        print(f"build_timings: {e}", file=sys.stderr)
        return 1
    print(summary(parsed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
