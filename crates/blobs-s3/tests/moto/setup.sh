#!/usr/bin/env bash
# Installs moto's S3-compatible server (PyPI `moto[server]`) into the virtual environment
# given as $1, unless it is already there. Used by the S3 blob store's tests.
set -euo pipefail
venv="$1"
ready() { [ -x "$venv/bin/moto_server" ]; }
if ready; then
    echo "moto setup: $venv is ready"
    exit 0
fi
# Test binaries run this concurrently on a fresh machine: without the lock, one would find
# another's half-made venv (no pip yet) and fail.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi
if ready; then
    echo "moto setup: $venv is ready"
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]>=5,<6'; then
    rm -rf "$venv"
    exit 1
fi
"$venv/bin/moto_server" --help >/dev/null
echo "moto setup: installed into $venv"
