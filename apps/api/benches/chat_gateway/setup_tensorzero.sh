#!/usr/bin/env bash
# Installs the pinned `tensorzero` Python package (which embeds TensorZero's Rust gateway)
# into a private virtual environment, once. Idempotent: a marker file records the version.
#
# Usage: setup_tensorzero.sh [VENV_DIR]   (default: $HOME/.cache/tessera-venvs/tensorzero)
# TENSORZERO_VERSION overrides the pinned version.
set -euo pipefail

venv="${1:-$HOME/.cache/tessera-venvs/tensorzero}"
version="${TENSORZERO_VERSION:-2026.6.0}"
marker="$venv/.tessera-tensorzero-ready"

if [ -x "$venv/bin/python" ] && [ "$(cat "$marker" 2>/dev/null)" = "$version" ]; then
    exit 0
fi
echo "tensorzero setup: installing 'tensorzero==$version' into $venv" >&2
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "tensorzero==$version"
"$venv/bin/python" -c 'import tensorzero; tensorzero._start_http_gateway' >/dev/null
echo "$version" >"$marker"
