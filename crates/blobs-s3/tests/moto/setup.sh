#!/usr/bin/env bash
# Installs moto's S3-compatible server (PyPI `moto[server]`) into the virtual environment
# given as $1, unless it is already there. Used by the S3 blob store's tests.
set -euo pipefail
venv="$1"
if [ -x "$venv/bin/moto_server" ]; then
    echo "moto setup: $venv is ready"
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]>=5,<6'
"$venv/bin/moto_server" --help >/dev/null
echo "moto setup: installed into $venv"
