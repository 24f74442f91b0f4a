"""Counts the tokens of a text file with OpenAI's `tiktoken` (o200k_base), the Python
reference the Rust counter is compared with in `prompt_compose.rs`.

Usage: python tiktoken_count.py <file> <repetitions>
Prints one JSON line: {"tokens": <per pass>, "seconds": <total for all passes>}.
The vocabulary is read from TIKTOKEN_CACHE_DIR (the bench setup places it there; this
machine cannot download it).
"""

import json
import sys
import time

import tiktoken


def main() -> None:
    path, repetitions = sys.argv[1], int(sys.argv[2])
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    encoding = tiktoken.get_encoding("o200k_base")
    tokens = len(encoding.encode_ordinary(text))  # warm-up, and the count to compare
    started = time.perf_counter()
    for _ in range(repetitions):
        counted = len(encoding.encode_ordinary(text))
    seconds = time.perf_counter() - started
    assert counted == tokens
    print(json.dumps({"tokens": tokens, "seconds": seconds}))


if __name__ == "__main__":
    main()
