#!/usr/bin/env bash
# Installs the llama-cpp-python server into a private virtual environment, from the wheel
# `crates/llm-local/benches/setup_llama_cpp.sh` builds (PyPI has no prebuilt wheel, and
# building one takes about 20 minutes) and the server's pure-Python dependencies from PyPI.
#
# Exit codes: 0 ready; 3 no wheel (the tests that need it say so and skip); other: a real
# failure (the tests fail).
#
# Usage: setup.sh WHEELS_DIR VENV_DIR
set -euo pipefail
wheels="$1"
venv="$2"
wheel=$(ls "$wheels"/llama_cpp_python-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
    echo "llama.cpp setup: no llama-cpp-python wheel in $wheels; the llama.cpp server tests are SKIPPED (build it with crates/llm-local/benches/setup_llama_cpp.sh, about 20 minutes once)" >&2
    exit 3
fi
marker="$venv/.tessera-ready"
if [ "$(cat "$marker" 2>/dev/null)" = "$(basename "$wheel")" ]; then
    exit 0
fi
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
command -v flock >/dev/null 2>&1 && flock 9
if [ "$(cat "$marker" 2>/dev/null)" = "$(basename "$wheel")" ]; then
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel[server]"
"$venv/bin/python" -c 'import llama_cpp.server.app' >/dev/null
basename "$wheel" >"$marker"
echo "llama.cpp setup: installed $(basename "$wheel") with its server into $venv"
