"""Self-test of build_timings.py on a small report in the shape cargo's --timings HTML has.

Run: python3 -m unittest discover -s scripts -p 'test_*.py'
"""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_timings import summary, units  # noqa: E402

UNITS = [
    {"i": 0, "name": "serde", "version": "1.0.229", "mode": "todo", "target": "", "start": 0.0,
     "duration": 4.0, "rmeta_time": 1.0, "unblocked_units": [], "unblocked_rmeta_units": []},
    {"i": 1, "name": "qdrant-edge", "version": "0.7.0", "mode": "todo", "target": "", "start": 4.0,
     "duration": 420.0, "rmeta_time": 60.0, "unblocked_units": [], "unblocked_rmeta_units": []},
    {"i": 2, "name": "tessera-api", "version": "0.1.0", "mode": "todo", "target": " bin \"tessera-api\"",
     "start": 424.0, "duration": 56.0, "unblocked_units": [], "unblocked_rmeta_units": []},
]


def report(data: list[dict]) -> str:
    return (
        "<html><script>\nconst DURATION = 480;\n"
        f"const UNIT_DATA = {json.dumps(data, indent=2)};\n"
        "const CONCURRENCY_DATA = [];\n</script></html>"
    )


class BuildTimings(unittest.TestCase):
    def test_reads_every_unit(self) -> None:
        parsed = units(report(UNITS))
        self.assertEqual([u.name for u in parsed], ["serde", "qdrant-edge", "tessera-api"])
        self.assertEqual(parsed[2].target, 'bin "tessera-api"')
        self.assertEqual(parsed[1].duration, 420.0)

    def test_summary_ranks_by_cost_with_wall_and_cpu_time(self) -> None:
        text = summary(units(report(UNITS)), top=2)
        lines = text.splitlines()
        self.assertIn("3 units, wall 8.0 min, 480 s of compilation summed", lines[0])
        self.assertIn("qdrant-edge 0.7.0", lines[2])
        self.assertIn("87.5%", lines[2])
        self.assertIn('tessera-api 0.1.0 (bin "tessera-api")', lines[3])
        self.assertEqual(len(lines), 4)

    def test_a_page_without_unit_data_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "UNIT_DATA"):
            units("<html>not a timings report</html>")


if __name__ == "__main__":
    unittest.main()
