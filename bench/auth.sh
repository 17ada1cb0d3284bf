#!/usr/bin/env bash
# The authentication benchmark of BENCHMARKS.md: one handler on plain axum, unauthenticated
# (/open) and behind Basic authentication with the caching authenticator (/guarded, the same
# user every request, as a client keeps its credentials), under wrk, in alternate rounds (the
# first setting rotating); the median of the rounds' ratios. Goal: guarded / open >= 0.9x.
# Exits 1 when the goal is missed or the run is too short to judge. Load stays on 127.0.0.1.
# The server runs alone on the last core and wrk on the others, so that the server's own cost
# sets the pace.
#
#   bench/auth.sh [ROUNDS] [SECONDS]      (default 7 rounds of 10 s per setting)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
seconds=${2:-10}
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release -q -p ferrowizard-auth --example auth_bench
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
last=$(($(nproc) - 1))
others=0-$((last > 0 ? last - 1 : 0))
echo "cores: $(nproc); server on $last, wrk on $others"
taskset -c "$last" target/release/examples/auth_bench "$port" >/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/open" >/dev/null && break; sleep 0.1; done
results=$(mktemp)
settings=(open guarded)
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < 2; k++)); do
    s=${settings[$(((r + k) % 2))]}
    rps=$(taskset -c "$others" wrk -t1 -c32 -d"${seconds}s" -H "Authorization: Basic YWRhOnB3" "http://127.0.0.1:$port/$s" \
      | awk '/Requests\/sec/ {print $2}')
    echo "$r $s $rps" | tee -a "$results"
  done
done
python3 bench/goals.py pair "$results" open guarded 0.9
