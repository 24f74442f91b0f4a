"""Starts TensorZero's gateway for the chat_gateway benchmark and keeps it running.

Usage: python tensorzero_gateway.py <config.toml> [<postgres URL>]

With a PostgreSQL URL the gateway stores its inferences there (the config's
`[gateway.observability]` says whether synchronously); the database must be prepared by
`apply_tensorzero_migrations.sh` first.

Prints one line `READY <base_url> <pid>` on stdout once the gateway listens, where <pid> is
the process that runs the gateway (this one: the wheel runs its Rust gateway on threads of
the Python process, it spawns no child), then blocks until stdin is closed (the benchmark
holds it open and closes it, or dies, to stop the gateway).
"""

import os
import sys

import tensorzero


def main() -> None:
    config_file = sys.argv[1]
    postgres_url = sys.argv[2] if len(sys.argv) > 2 else None
    gateway = tensorzero._start_http_gateway(
        config_file=config_file,
        clickhouse_url=None,
        postgres_url=postgres_url,
        valkey_url=None,
        async_setup=False,
    )
    print(f"READY {gateway.base_url} {os.getpid()}", flush=True)
    sys.stdin.read()
    gateway.close()


if __name__ == "__main__":
    main()
