#!/usr/bin/env bash
# Overload without collapse: realtime offered twice its capacity in an open model (volley, one
# shared connection pool, 5 s request timeout), in rounds. Each round measures the capacity
# just before (closed model) and then floods at twice it, and reports goodput over capacity,
# the 99th percentile of the 503 answers, and client timeouts.
#
# Goals (bench/goals.py), over the rounds' medians: goodput / capacity >= 0.9, the 503s' 99th
# percentile <= 10 ms; over every round: no client timeout and no KO other than a 503. Exits 1
# when one is missed, or when the run is too short to judge (fewer than 3 rounds, or rounds
# under 5 s).
#
#   bench/overload.sh [ROUNDS] [SECONDS] [ENDPOINT]      (default 3 rounds of 10 s, backend)
#
# ENDPOINT `backend`: the long poll `/realtime/quotes/ACME/next` with the feed ticking every
# 10 ms, a handler that waits on something else as a database call would; capacity is what
# `maxThreads: 64` handlers waiting ~10 ms each can serve, measured with 64 closed-model users.
# ENDPOINT `cpu`: `/realtime/quotes/ACME`, answered at once, so that capacity is the CPU's,
# measured with 64 closed-model users; volley shares the machine's cores with the service.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}
endpoint=${3:-backend}
case $endpoint in
  backend) path=/realtime/quotes/ACME/next ;;
  cpu) path=/realtime/quotes/ACME ;;
  *) echo "ENDPOINT is backend or cpu"; exit 2 ;;
esac
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
cargo build --release -q -p realtime -p volley
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/realtime.yaml" <<YAML
server:
  maxThreads: 64
  maxQueuedRequests: 64
  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]
  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]
  requestLog: {appenders: []}
logging: {level: WARN, appenders: []}
quotes: {tickInterval: 10ms}
YAML
target/release/realtime server "$work/realtime.yaml" > "$work/realtime.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  addr=$(grep -m1 'application listening' "$work/realtime.out" 2>/dev/null | sed 's#.*://##' || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
scenario() { # NAME INJECTION
  cat <<YAML
baseUrl: http://$addr
consoleInterval: 1h
http: {shareConnections: true, requestTimeout: 5s}
scenarios:
  - name: $1
    injection: [$2]
    steps: [{request: {name: quote, path: $path}}]
YAML
}
scenario capacity "{constantConcurrentUsers: 64, during: ${seconds}s}" > "$work/closed.yaml"
# The share of the machine's CPU time its hypervisor gave to others (/proc/stat's steal): a
# virtual machine's cores taken away for milliseconds at a time stall the service and volley
# together, and show as a tail in every latency.
cpu_ticks() { awk '/^cpu / {print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
for r in $(seq 1 "$rounds"); do
  target/release/volley run "$work/closed.yaml" --out "$work/closed" > /dev/null
  capacity=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['global']['ok']['count'] / $seconds)" "$work/closed/results.json")
  rate=$(python3 -c "print(round(2 * $capacity))")
  scenario flood "{constantUsersPerSec: $rate, during: ${seconds}s}" > "$work/open.yaml"
  before=$(cpu_ticks)
  target/release/volley run "$work/open.yaml" --out "$work/open" > /dev/null
  steal=$(printf '%s %s\n' "$before" "$(cpu_ticks)" | awk '{printf "%.2f", 100 * ($3 - $1) / ($4 - $2)}')
  python3 bench/goals.py overload-round "$work/open/results.json" "$capacity" "$seconds" "$r" "$rate" "$steal" "$work/rounds"
done
python3 bench/goals.py overload "$work/rounds"
