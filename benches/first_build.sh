#!/usr/bin/env bash
# A newcomer's first `just run`, cold (issue 63): a fresh clone of the committed tree, an empty
# cargo home (the registry downloaded again), an empty target folder and an empty models
# folder. The clock runs from the first command to the README's first chat answered, in the
# steps `just run` takes: the crates fetched, the server built (`cargo build -p tessera-api
# --timings`, the very build `cargo run` makes), the models fetched (`just models`), the
# server started on a fresh data folder, a token issued and the first chat answered.
#
# Prints the CPU, each step's time, the build's costliest units, and the whole against the
# goal (20 minutes); cargo's timings report is kept under TESSERA_BENCH_OUT (default
# target/first-build). Run it on an idle machine (`just bench-first-build`): anything else
# running stretches every figure. TESSERA_BENCH_REV=<commit> builds that commit instead of
# HEAD, for a before-and-after on the same machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${TESSERA_BENCH_OUT:-$root/target/first-build}
rev=${TESSERA_BENCH_REV:-HEAD}
goal_s=1200
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-first-build.XXXXXX")
server=
cleanup() {
    # The server runs under `just` and cargo in a session of its own: stop all of it.
    if [ -n "$server" ]; then
        kill -- "-$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) threads," \
    "flags: $(grep -m1 -o -w -E 'avx512_vnni|avx512f|avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "commit: $(git -C "$root" rev-parse --short "$rev"), $(rustc --version)"

git clone -q --no-checkout "$root" "$work/tessera"
git -C "$work/tessera" checkout -q "$(git -C "$root" rev-parse "$rev")"
cd "$work/tessera"
# The toolchain stays where rustup keeps it; everything cargo fetches or builds starts empty.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_HOME="$work/cargo-home" CARGO_TARGET_DIR="$work/target" TESSERA_MODELS_DIR="$work/models"
mkdir -p "$CARGO_HOME"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
minutes() { awk -v s="$1" 'BEGIN { printf "%d min %02d s", s / 60, s % 60 }'; }
step() { printf '%-44s %8s s  (%s)\n' "$1" "$2" "$(minutes "$2")"; }

started=$(now)
cargo fetch -q
fetched=$(now)
step "crates fetched (empty cargo home)" "$(elapsed "$started" "$fetched")"
cargo build -q -p tessera-api --timings
built=$(now)
step "server built (cargo build -p tessera-api)" "$(elapsed "$fetched" "$built")"
report=$(ls -t "$CARGO_TARGET_DIR"/cargo-timings/cargo-timing-*.html | head -n 1)
cp "$report" "$out/"
just models >/dev/null 2>&1
models=$(now)
step "models fetched (just models)" "$(elapsed "$built" "$models")"

# `just run` as the README gives it, on free ports and this clone's fresh data folder.
port=${TESSERA_BENCH_PORT:-18443}
TESSERA_LISTEN="127.0.0.1:$port" TESSERA_METRICS__LISTEN="" setsid just run >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do
    if curl -sf --cacert tessera-data/tls/cert.pem "https://localhost:$port/v1/health/ready" >/dev/null 2>&1; then
        break
    fi
    kill -0 "$server" 2>/dev/null || { echo "the server stopped:" >&2; tail -n 20 "$work/server.log" >&2; exit 1; }
    sleep 0.5
done
ready=$(now)
step "server ready (health/ready answers)" "$(elapsed "$models" "$ready")"
client_id=$(sed -n 's/^  client_id: *//p' "$work/server.log")
client_secret=$(sed -n 's/^  client_secret: *//p' "$work/server.log")
[ -n "$client_id" ] && [ -n "$client_secret" ] || { echo "no bootstrap client in the server's output" >&2; exit 1; }
token=$(curl -sf --cacert tessera-data/tls/cert.pem "https://localhost:$port/oauth/token" \
    -d grant_type=client_credentials -d client_id="$client_id" -d client_secret="$client_secret" \
    | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
answer=$(curl -sf --cacert tessera-data/tls/cert.pem "https://localhost:$port/v1/chats" \
    -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    -d '{"modelId":"local/smollm2-135m-instruct","messages":[{"role":"user","content":"What is the capital of France?"}],"maxTokens":32}')
answered=$(now)
step "first chat answered" "$(elapsed "$ready" "$answered")"
echo "answer: $(printf '%s' "$answer" | sed 's/.*"content":"\([^"]*\)".*/\1/')"
total=$(elapsed "$started" "$answered")
echo "first just run, cold: $(minutes "$total") against the goal of $(minutes "$goal_s"):" \
    "$(awk -v t="$total" -v g="$goal_s" 'BEGIN { printf "%.2f× the goal", t / g }')"
echo
echo "the build's costliest units (report: $out/$(basename "$report")):"
python3 "$root/scripts/build_timings.py" "$report" --top 20
