#!/usr/bin/env bash
# Installs the LiteLLM proxy into a private virtual environment, once.
#
# Idempotent: when the venv already holds the pinned LiteLLM, whose proxy imported after
# its install (a marker file records the version), it does nothing. Otherwise it (re)creates
# the venv and installs `litellm[proxy]` from PyPI (a minute or two). Exits non-zero with a
# message on stderr when that is impossible (no python3, no network), so the tests that
# need it fail instead of passing silently.
#
# Usage: setup.sh [VENV_DIR]   (default: $TESSERA_LITELLM_VENV, else
#                               $HOME/.cache/tessera-venvs/litellm)
# LITELLM_VERSION overrides the pinned version.
set -euo pipefail

venv="${1:-${TESSERA_LITELLM_VENV:-$HOME/.cache/tessera-venvs/litellm}}"
# The version the tests were written against (mock responses, error shapes).
version="${LITELLM_VERSION:-1.106.2}"

# Written once the proxy imported after an install; checking it is instant (importing
# the proxy takes seconds).
marker="$venv/.tessera-litellm-ready"

ready() {
    [ -x "$venv/bin/litellm" ] && [ "$(cat "$marker" 2>/dev/null)" = "$version" ]
}

if ready; then
    echo "litellm setup: $venv is ready"
    exit 0
fi

python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
    echo "litellm setup: $python is not installed; cannot create $venv" >&2
    exit 1
fi

# A concurrent run (another test binary) would race on the venv: serialize with a lock.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9
fi
if ready; then
    echo "litellm setup: $venv is ready"
    exit 0
fi

start=$(date +%s)
echo "litellm setup: creating $venv and installing 'litellm[proxy]==$version' from PyPI (a minute or two)"
rm -rf "$venv"
"$python" -m venv "$venv"
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip; then
    echo "litellm setup: pip could not reach PyPI to upgrade itself" >&2
    rm -rf "$venv"
    exit 1
fi
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$version"; then
    echo "litellm setup: pip could not install 'litellm[proxy]==$version' (is PyPI reachable?)" >&2
    rm -rf "$venv"
    exit 1
fi
if ! "$venv/bin/python" -c 'import litellm.proxy.proxy_server' >/dev/null 2>&1; then
    echo "litellm setup: 'litellm[proxy]' installed but the proxy does not import" >&2
    exit 1
fi
echo "$version" >"$marker"
echo "litellm setup: installed in $(( $(date +%s) - start )) s"
