#!/usr/bin/env bash
# The HTTP client benchmark of BENCHMARKS.md: a handler on plain axum that calls another local
# service and returns its answer, through ferrowizard-client (/client) and through a bare
# hyper-util pooled client (/bare), under wrk, in alternate rounds (the first setting
# rotating); the median of the rounds' ratios. Goal: client / bare >= 0.95x. Exits 1 when the
# goal is missed or the run is too short to judge. Load stays on 127.0.0.1. The front (the
# process measured) runs alone on the last core; wrk and the upstream share the others, so that
# the front's own cost sets the pace rather than the scheduler's mix of three processes.
#
#   bench/client.sh [ROUNDS] [SECONDS]      (default 7 rounds of 10 s per setting)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
seconds=${2:-10}
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release -q -p ferrowizard-client --example client_bench
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
front=$(free) upstream=$(free)
last=$(($(nproc) - 1))
others=0-$((last > 0 ? last - 1 : 0))
echo "cores: $(nproc); front on $last, wrk and upstream on $others"
taskset -c "$others" target/release/examples/client_bench upstream "$upstream" >/dev/null &
pids=$!
taskset -c "$last" target/release/examples/client_bench front "$front" "$upstream" >/dev/null &
pids="$pids $!"
trap 'kill $pids 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$front/bare" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$front/client" >/dev/null
results=$(mktemp)
settings=(bare client)
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < 2; k++)); do
    s=${settings[$(((r + k) % 2))]}
    rps=$(taskset -c "$others" wrk -t1 -c32 -d"${seconds}s" "http://127.0.0.1:$front/$s" \
      | awk '/Requests\/sec/ {print $2}')
    echo "$r $s $rps" | tee -a "$results"
  done
done
python3 bench/goals.py pair "$results" bare client 0.95
