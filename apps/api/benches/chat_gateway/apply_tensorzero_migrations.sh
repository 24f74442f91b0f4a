#!/usr/bin/env bash
# Prepares an empty PostgreSQL database for TensorZero's gateway to store its inferences in
# (issue 36). The `tensorzero` wheel's embedded gateway refuses to start on a database its
# migrations have not prepared, and only the standalone binary (on no registry) can run them
# (`--run-postgres-migrations`). So this takes the same SQL out of the pinned wheel
# (`extract_tensorzero_migrations.py`, each text checked against the SHA-384 listed in
# `tensorzero_migrations.sha384`; no copy of it is kept in the repository), applies it with
# psql, one transaction per file, and records each version in the table sqlx keeps for that
# set, which is what the gateway checks at start-up.
#
# First it tries the extensions TensorZero's documentation asks for and prints, per
# extension, `extension <name>: installed` or `extension <name>: not installed: <error>`.
#
# Usage: apply_tensorzero_migrations.sh <database URL>
# TENSORZERO_VENV names the wheel's virtual environment (default, as the benchmark's:
# $HOME/.cache/tessera-venvs/tensorzero); it is installed there first when missing.
set -euo pipefail

url="$1"
here="$(cd "$(dirname "$0")" && pwd)"
venv="${TENSORZERO_VENV:-$HOME/.cache/tessera-venvs/tensorzero}"
bash "$here/setup_tensorzero.sh" "$venv"
library="$(echo "$venv"/lib/python3*/site-packages/tensorzero/tensorzero.abi3.so)"
migrations="$(mktemp -d)"
trap 'rm -rf "$migrations"' EXIT
"$venv/bin/python" "$here/extract_tensorzero_migrations.py" \
    "$library" "$here/tensorzero_migrations.sha384" "$migrations"
run_psql() { psql -X -q -v ON_ERROR_STOP=1 "$url" "$@"; }

for extension in pg_trgm pg_cron vector; do
    if error=$(run_psql -c "CREATE EXTENSION IF NOT EXISTS $extension" 2>&1); then
        echo "extension $extension: installed"
    else
        echo "extension $extension: not installed: $(echo "$error" | head -n 1)"
    fi
done

# sqlx's bookkeeping table, as `sqlx::migrate` creates it.
apply_set() {
    local table="$1" set="$2"
    run_psql -c "CREATE TABLE IF NOT EXISTS $table (
        version BIGINT PRIMARY KEY, description TEXT NOT NULL,
        installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL,
        checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)"
    local file name version description checksum
    for file in "$migrations/$set"/*.sql; do
        name="$(basename "$file" .sql)"
        version="${name%%_*}"
        description="${name#*_}"
        description="${description//_/ }"
        # The durable-queue migration calls a schema of TensorZero's separate `durable`
        # crate, which the wheel does not carry; inference writes never use those queues.
        if grep -q 'durable\.create_queue' "$file"; then
            echo "migration $set/$name: recorded, not run (needs TensorZero's durable schema)"
        elif ! output=$(run_psql --single-transaction -f "$file" 2>&1); then
            echo "migration $set/$name failed: $output" >&2
            exit 1
        fi
        checksum="$(sha384sum "$file" | cut -d ' ' -f 1)"
        run_psql -c "INSERT INTO $table (version, description, success, checksum, execution_time)
            VALUES ($version, '$description', true, '\\x$checksum', 0) ON CONFLICT DO NOTHING"
    done
}

apply_set _sqlx_migrations core
apply_set tensorzero_auth__sqlx_migrations auth
apply_set tensorzero_stored_config__sqlx_migrations stored_config
