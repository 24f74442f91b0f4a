#!/usr/bin/env bash
# Prints the path of a Python with `llama_cpp` (llama-cpp-python), the llama.cpp peer of the
# local generation benchmark. PyPI has no prebuilt wheel: the first run compiles one (about
# 20 minutes on 2 cores) and keeps it in ~/.cache/tessera-wheels; later runs reuse it.
# Built without native tuning: the native build enables AMX instructions that crash on the
# virtual machines this runs on (see ../shared/notes/local-inference.md). The instruction
# sets are chosen from the CPU's flags so that the peer runs its best kernels, as the engine
# does: AVX2, FMA and F16C everywhere, and AVX-512 (F, BW, VL, VBMI, VNNI, BF16) where the
# CPU has all of them. Each family has its own wheel and environment.
set -euo pipefail
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
family=avx2
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
if has avx512f && has avx512bw && has avx512vl && has avx512vbmi && has avx512_vnni && has avx512_bf16; then
    family=avx512
    cmake_args="$cmake_args -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
fi
venv="$HOME/.cache/tessera-venvs/llama-cpp-$family"
wheels="$HOME/.cache/tessera-wheels/llama-cpp-$family"
if ! "$venv/bin/python" -c 'import llama_cpp' 2>/dev/null; then
    mkdir -p "$wheels"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    if ! compgen -G "$wheels/llama_cpp_python-*.whl" >/dev/null; then
        echo "building llama-cpp-python for $family (about 20 minutes, once)" >&2
        CMAKE_ARGS="$cmake_args" \
            "$venv/bin/pip" wheel --quiet --no-deps -w "$wheels" 'llama-cpp-python>=0.3,<0.4' >&2
    fi
    "$venv/bin/pip" install --quiet "$wheels"/llama_cpp_python-*.whl >&2
fi
echo "$venv/bin/python"
