#!/usr/bin/env bash
# Prints the path of a Python with `llama_cpp` (llama-cpp-python), the llama.cpp peer of the
# local generation benchmark. PyPI has no prebuilt wheel: the first run compiles one (about
# 20 minutes on 2 cores) and keeps it in ~/.cache/tessera-wheels; later runs reuse it.
# Built without native tuning: the native build enables AMX instructions that crash on the
# virtual machines this runs on (see ../shared/notes/local-inference.md). AVX2 and FMA stay
# on, as candle uses them at run time.
set -euo pipefail
venv="$HOME/.cache/tessera-venvs/llama-cpp"
wheels="$HOME/.cache/tessera-wheels"
if ! "$venv/bin/python" -c 'import llama_cpp' 2>/dev/null; then
    mkdir -p "$wheels"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    if ! compgen -G "$wheels/llama_cpp_python-*.whl" >/dev/null; then
        echo "building llama-cpp-python (about 20 minutes, once)" >&2
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
            "$venv/bin/pip" wheel --quiet --no-deps -w "$wheels" 'llama-cpp-python>=0.3,<0.4' >&2
    fi
    "$venv/bin/pip" install --quiet "$wheels"/llama_cpp_python-*.whl >&2
fi
echo "$venv/bin/python"
