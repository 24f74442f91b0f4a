"""Parses a Prometheus text exposition (standard input) with the official Python client's
parser, `prometheus_client.parser.text_string_to_metric_families`, and prints every sample
as one JSON object per line: {"family", "type", "name", "labels", "value"}. A document the
parser refuses makes this exit non-zero with its error."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> None:
    text = sys.stdin.read()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            print(
                json.dumps(
                    {
                        "family": family.name,
                        "type": family.type,
                        "name": sample.name,
                        "labels": sample.labels,
                        "value": sample.value,
                    }
                )
            )


if __name__ == "__main__":
    main()
