#!/usr/bin/env bash
# The chat_gateway benchmark's own PostgreSQL cluster (issue 36): Tessera and the peers that
# store what they serve write to the same server, and TensorZero's extensions and settings
# stay off the machine's shared server. Creates the cluster once (Debian's
# `pg_createcluster`, trust auth on loopback, TLS off so no client pays for it), installs
# pg_cron when apt can (TensorZero schedules its partition jobs with it), starts the cluster
# and prints its admin URL on stdout. Idempotent; needs root (or the postgres user's rights).
#
# Usage: bench_postgres.sh            prints postgres://postgres@127.0.0.1:<port>/postgres
# TESSERA_BENCH_PG_PORT sets the port (default 5433), TESSERA_BENCH_PG_CLUSTER the name.
set -euo pipefail

port="${TESSERA_BENCH_PG_PORT:-5433}"
name="${TESSERA_BENCH_PG_CLUSTER:-tessera_bench}"
# The database TensorZero's rows go to; pg_cron's jobs live in one database only.
cron_database="tensorzero_bench"
version=$(ls /etc/postgresql | sort -V | tail -n 1)
if [ -z "$version" ]; then
    echo "bench_postgres: no PostgreSQL installation under /etc/postgresql" >&2
    exit 1
fi

if ! pg_lsclusters --no-header | awk '{print $1 " " $2}' | grep -qx "$version $name"; then
    echo "bench_postgres: creating cluster $version/$name on port $port" >&2
    pg_createcluster "$version" "$name" --port "$port" -- --auth=trust >&2
fi

conf="/etc/postgresql/$version/$name/conf.d/90-tessera-bench.conf"
{
    echo "listen_addresses = '127.0.0.1'"
    echo "port = $port"
    echo "ssl = off"
} >"$conf.new"
extension_dir="/usr/share/postgresql/$version/extension"
if [ ! -f "$extension_dir/pg_cron.control" ]; then
    echo "bench_postgres: installing postgresql-$version-cron" >&2
    apt-get install -y -q "postgresql-$version-cron" >&2 ||
        echo "bench_postgres: pg_cron could not be installed; TensorZero runs without it" >&2
fi
if [ -f "$extension_dir/pg_cron.control" ]; then
    echo "shared_preload_libraries = 'pg_cron'" >>"$conf.new"
    echo "cron.database_name = '$cron_database'" >>"$conf.new"
fi
if ! cmp -s "$conf.new" "$conf"; then
    mv "$conf.new" "$conf"
    chown postgres:postgres "$conf" 2>/dev/null || true
    # Settings read at start-up only: restart if it runs.
    pg_ctlcluster --skip-systemctl-redirect "$version" "$name" stop >/dev/null 2>&1 || true
else
    rm -f "$conf.new"
fi
if ! pg_lsclusters --no-header | awk '$1 == "'"$version"'" && $2 == "'"$name"'" {print $4}' | grep -qx online; then
    pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >&2
fi
echo "postgres://postgres@127.0.0.1:$port/postgres"
