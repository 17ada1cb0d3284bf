#!/usr/bin/env bash
# The WebSocket benchmark of BENCHMARKS.md: volley's `ws:` steps against a hand-written
# tokio-tungstenite client (crates/volley/examples/ws_echo.rs) doing the same thing: 32
# sockets to realtime's /realtime/stream, each sending a symbol and awaiting its quote in a
# loop. Answers a second, in alternate rounds (the first setting rotating); the median of the
# rounds' ratios. Goal: volley / hand-written >= 0.9x. The service runs alone on the last core,
# the generator on the others; the feed moves once an hour, so that no push mixes with the
# answers. Exits 1 when the goal is missed or the run is too short to judge. Load stays on
# 127.0.0.1.
#
#   bench/ws.sh [ROUNDS] [SECONDS]      (default 7 rounds of 10 s per setting)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
seconds=${2:-10}
connections=32
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
cargo build --release -q -p realtime --bin realtime -p volley --bin volley --example ws_echo
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free) admin=$(free)
last=$(($(nproc) - 1))
others=0-$((last > 0 ? last - 1 : 0))
echo "cores: $(nproc); realtime on $last, the generator on $others; $connections sockets"
work=$(mktemp -d)
cat >"$work/realtime.yaml" <<YAML
server:
  applicationConnectors: [{type: http, port: $port, bindHost: 127.0.0.1}]
  adminConnectors: [{type: http, port: $admin, bindHost: 127.0.0.1}]
  requestLog: {appenders: []}
logging: {level: WARN, appenders: []}
quotes: {tickInterval: 1h}
YAML
cat >"$work/ws.yaml" <<YAML
baseUrl: http://127.0.0.1:$port
maxDuration: $((seconds + 30))s
consoleInterval: 1h
scenarios:
  - name: echo
    injection: [{atOnceUsers: $connections}]
    steps:
      - ws: {name: connect, connect: /realtime/stream}
      - during:
          duration: ${seconds}s
          steps:
            - ws: {name: echo, send: ACME, await: {messages: 1}}
      - ws: {name: close, close: true}
YAML
taskset -c "$last" target/release/realtime server "$work/realtime.yaml" >/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$admin/ping" >/dev/null && break; sleep 0.1; done
results=$(mktemp)
settings=(hand volley)
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < 2; k++)); do
    s=${settings[$(((r + k) % 2))]}
    if [ "$s" = hand ]; then
      rate=$(taskset -c "$others" target/release/examples/ws_echo \
        "ws://127.0.0.1:$port/realtime/stream" "$connections" "$seconds" ACME)
    else
      taskset -c "$others" target/release/volley run "$work/ws.yaml" --out "$work/out" >/dev/null
      rate=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); q=r["requests"]["echo"]; print(round(q["ok"]["count"]/r["durationSeconds"],1)) if q["ko"]["count"]==0 else sys.exit("KO: %s" % r["errors"])' "$work/out/results.json")
    fi
    echo "$r $s $rate" | tee -a "$results"
  done
done
python3 bench/goals.py pair "$results" hand volley 0.9
