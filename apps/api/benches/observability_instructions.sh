#!/usr/bin/env bash
# What metrics and every exported trace cost a completion, counted in instructions (issue 32):
# the like-for-like form of the chat_gateway benchmark's CPU-time comparison, whose rounds
# vary by ±10 % on a shared 2-core machine. The release `tessera-api` runs under
# `valgrind --tool=callgrind` on its embedded SQLite (so the database's work is counted in
# the same process), in front of tests/observability/otlp_receiver.py, which plays both the
# OpenAI-compatible upstream and the OTLP collector. Each configuration (metrics and traces
# off, then on with sampling 1.0) is warmed up, its counters zeroed, then driven through
# `COMPLETIONS` sequential `/v1/chats` completions of each kind (JSON and streamed) and a
# batch interval of idle time (so the scheduled span export lands in the window), and its
# instructions are dumped. It prints instructions per completion and the ratio on/off.
#
# Usage: observability_instructions.sh <bin dir> <python with opentelemetry-proto>
# Environment: COMPLETIONS (per kind, default 200).
set -euo pipefail
shopt -s inherit_errexit

bin_dir=$1
python=$2
completions=${COMPLETIONS:-200}
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

command -v valgrind >/dev/null || { echo "valgrind is missing (apt install valgrind)" >&2; exit 1; }

# The upstream stub and OTLP receiver; its first line names its port.
"$python" "$root/tests/observability/otlp_receiver.py" >"$work/receiver.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do grep -q '^listening' "$work/receiver.out" 2>/dev/null && break; sleep 0.2; done
stub_port=$(awk '/^listening/ {print $2}' "$work/receiver.out")
[ -n "$stub_port" ] || { echo "the receiver did not start: $(cat "$work/receiver.out")" >&2; exit 1; }

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Prints the instructions per completion of one configuration (`off` or `on`).
measure() {
    local mode=$1 data="$work/$1" port metrics_port pid token
    mkdir -p "$data"
    cat >"$data/catalog.toml" <<EOF
[providers.stub]
kind = "openai"
base_url = "http://127.0.0.1:$stub_port/v1"
api_key_env = "BENCH_STUB_KEY"

[[models]]
id = "bench/stub"
display_name = "Benchmark stub"
provider = "stub"
model_name = "stub-model"
context_window = 128000
max_tokens_per_request = 1024
capabilities = { streaming = true }
credit_multiplier = 1
EOF
    port=$(free_port)
    metrics_port=$(free_port)
    local env=(env -i PATH="$PATH" HOME="$HOME" TESSERA_DATA_DIR="$data"
        TESSERA_MODELS__CATALOG_FILE="$data/catalog.toml" BENCH_STUB_KEY=sk-bench
        TESSERA_LOG=warn TESSERA_LISTEN="127.0.0.1:$port" TESSERA_METRICS__LISTEN=
        # Limits no run can reach (as in chat_gateway): every request is a completion.
        TESSERA_RATE_LIMIT__ORGANIZATION_PER_MINUTE=100000000
        TESSERA_RATE_LIMIT__PRINCIPAL_PER_MINUTE=100000000
        TESSERA_RATE_LIMIT__ANONYMOUS_PER_MINUTE=100000000)
    if [ "$mode" = on ]; then
        env+=(TESSERA_METRICS__LISTEN="127.0.0.1:$metrics_port"
            OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$stub_port" OTEL_TRACES_SAMPLER_ARG=1.0)
    fi
    "${env[@]}" "$bin_dir/tessera-admin" migrate >/dev/null
    local org client
    org=$("${env[@]}" "$bin_dir/tessera-admin" org create --name Bench --plan pro --json)
    org=$("$python" -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$org")
    client=$("${env[@]}" "$bin_dir/tessera-admin" client create --org "$org" --scopes chats:invoke --json)
    "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.$mode.%p" \
        "$bin_dir/tessera-api" >"$work/api.$mode.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 600); do
        curl -skf "https://127.0.0.1:$port/v1/health/ready" >/dev/null 2>&1 && break
        sleep 0.5
    done
    token=$("$python" - "$port" "$client" <<'PY'
import json, ssl, sys, urllib.request
client = json.loads(sys.argv[2])
body = json.dumps({"grant_type": "client_credentials", "client_id": client["clientId"],
                   "client_secret": client["clientSecret"], "scope": "chats:invoke"}).encode()
request = urllib.request.Request(f"https://127.0.0.1:{sys.argv[1]}/oauth/token", body,
                                 {"content-type": "application/json"})
print(json.load(urllib.request.urlopen(request, context=ssl._create_unverified_context()))["access_token"])
PY
)
    complete() {
        local body='{"modelId":"bench/stub","messages":[{"role":"user","content":"Hello"}]'
        [ "$1" = stream ] && body+=',"stream":true'
        curl -skf -o /dev/null -H "authorization: Bearer $token" -H 'content-type: application/json' \
            -d "$body}" "https://127.0.0.1:$port/v1/chats"
    }
    for _ in $(seq 1 20); do complete json; complete stream; done
    sleep 6 # the warm-up's spans exported
    callgrind_control -z "$pid" >/dev/null 2>&1
    for _ in $(seq 1 "$completions"); do complete json; complete stream; done
    sleep 6 # one export interval: the window's spans are sent inside it
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    # The dump made on request (part 1) holds the window; the one at exit, the shutdown.
    local dump="$work/callgrind.$mode.$pid.1"
    [ -f "$dump" ] || { echo "no callgrind dump for $mode: $(ls "$work")" >&2; tail -5 "$work/api.$mode.log" >&2; exit 1; }
    awk '/^(summary|totals):/ {print $2; exit}' "$dump" | awk -v n=$((2 * completions)) '{printf "%.0f\n", $1 / n}'
}

echo "instructions per /v1/chats completion (half JSON, half streamed; $completions of each; Tessera's process with its SQLite)"
off=$(measure off)
on=$(measure on)
printf '| metrics and traces | instructions per completion | on/off |\n|---|---:|---:|\n'
printf '| off | %s | 1.000 |\n' "$off"
printf '| on (sampling 1.0) | %s | %.3f |\n' "$on" "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')"
