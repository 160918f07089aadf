#!/usr/bin/env bash
# it_peers.sh: the peer servers of other runtimes (servers/go-mutex.toml, go-actor.toml: Go's
# net/http, a map behind a sync.Mutex against a store goroutine over channels; erl-ets.toml,
# erl-server.toml: Erlang/OTP, a public ETS table against a gen_server owning the users;
# rust-mutex.toml, rust-actor.toml: hyper+tokio, an Arc<Mutex> against a task behind mpsc) through
# `./runner.sh --verify NAME` on s3 (every route of the contract): their build_command builds
# them, they keep the contract, and result.json records what ran (the binary's sha256, the Go
# version) with no same-work warning. A runtime that is not installed (scripts/deps.sh peers)
# is skipped, the reason counted. Loopback only; about 10 s per server, plus minutes for a
# first Rust build (build/rust keeps it).
# shellcheck disable=SC2016  # single-quoted jq filters bind their own $variables
# test-timeout: 900
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KEEP_RESULTS="${KEEP_RESULTS:-0}"     # 1: keep the temporary folder

usage() {
    cat <<USAGE
usage: tests/it_peers.sh [--help]
Environment: KEEP_RESULTS ($KEEP_RESULTS).
USAGE
}
# shellcheck source=tests/lib/it.sh
. "$ROOT/tests/lib/it.sh"
it_args "$@"
it_tmpdir it_peers
export RESULTS_DIR="$TMP/results"

n=0 skipped=0
check() { # check NAME COMMAND...: one TAP line
    n=$((n + 1))
    if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; fi
}
skip() { n=$((n + 1)) skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $2"; }

# peer NAME TOOL VERSION_RE: --verify NAME on s3 when TOOL is installed.
peer() {
    local name="$1" tool="$2" version_re="$3" rc=0 res
    if ! command -v "$tool" >/dev/null; then
        skip "$name: --verify s3" "$tool not installed (scripts/deps.sh peers)"
        return
    fi
    "$ROOT/runner.sh" --verify "$name" s3 --batch=peers >"$TMP/$name.out" 2>&1 || rc=$?
    check "$name: ./runner.sh --verify $name s3 passes (its build_command built it)" test "$rc" = 0
    [[ "$rc" == 0 ]] || sed 's/^/# /' "$TMP/$name.out" | tail -n 8
    res="$RESULTS_DIR/peers/$name-s3-verify/result.json"
    check "$name: result.json records what ran (binary sha256, version) and no same-work warning" \
        jtrue --arg re "$version_re" '.config.server_definition.ran as $r
            | ($r.program_sha256 | test("^[0-9a-f]{64}$")) and ($r.version | test($re))
            and .config.verify_warnings == []' "$res"
}
jtrue() { jq -e "$@" >/dev/null; }

peer go-mutex go '^go-users 1 \(go1\.[0-9]+'
peer go-actor go '^go-users 1 \(go1\.[0-9]+'
peer erl-ets erl '^users_erl 1 \(Erlang/OTP [0-9]+'
peer erl-server erl '^users_erl 1 \(Erlang/OTP [0-9]+'
# Rust: Debian's cargo and crates (a first build takes minutes: build/rust keeps it)
if [[ -x /usr/bin/cargo && -n "$(compgen -G '/usr/share/cargo/registry/hyper-0.14*')" ]]; then
    peer rust-mutex cargo '^users-rs 1 \(hyper 0\.14, tokio 1\), rustc 1\.'
    peer rust-actor cargo '^users-rs 1 \(hyper 0\.14, tokio 1\), rustc 1\.'
else
    skip "rust-mutex: --verify s3" "Debian's cargo or librust-hyper-dev not installed (scripts/deps.sh peers)"
    skip "rust-actor: --verify s3" "Debian's cargo or librust-hyper-dev not installed (scripts/deps.sh peers)"
fi
echo "# $skipped skipped: a runtime not installed"
echo "1..$n"
