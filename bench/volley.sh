#!/usr/bin/env bash
# volley against wrk (HTTP/1.1) and h2load (HTTP/2 with prior knowledge) on the same target
# (realtime-bare, no logging), in interleaved rounds, and volley's peak memory with 10,000
# concurrent users that pause between requests.
#
#   bench/volley.sh [ROUNDS] [SECONDS]      (default 3 rounds of 10 s)
#
# Goals (bench/goals.py): median volley / wrk >= 1.0 (`threads: 1` has none), median volley
# HTTP/2 / h2load >= 0.9, peak RSS with 10,000 users <= 200 MB. Exits 1 when one is missed, or
# when the run is too short to judge (fewer than 3 rounds, or rounds under 5 s).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
command -v wrk >/dev/null && command -v h2load >/dev/null ||
  { apt-get update -qq && apt-get install -y -qq wrk nghttp2-client >/dev/null; }
cargo build --release -q -p realtime -p volley
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
target/release/realtime-bare 0 > "$work/bare.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  addr=$(grep -m1 'listening on' "$work/bare.out" 2>/dev/null | sed 's#.*://##' || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
cat > "$work/closed.yaml" <<YAML
baseUrl: http://$addr
consoleInterval: 1h
scenarios:
  - name: bench
    injection: [{constantConcurrentUsers: 64, during: ${seconds}s}]
    steps: [{request: {name: quote, path: /realtime/quotes/ACME}}]
YAML
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for r in $(seq 1 "$rounds"); do
  w=$(wrk -t1 -c64 -d"${seconds}s" "http://$addr/realtime/quotes/ACME" | awk '/Requests\/sec/ {print $2}')
  v=$(target/release/volley run "$work/closed.yaml" --out "$work/out" | awk '/mean throughput/ {print $5}')
  v1=$(target/release/volley run "$work/closed.yaml" --set threads=1 --out "$work/out" | awk '/mean throughput/ {print $5}')
  echo "$w" >> "$work/wrk"; echo "$v" >> "$work/volley"; echo "$v1" >> "$work/volley1"
  echo "$v / $w" | bc -l >> "$work/ratio"; echo "$v1 / $w" | bc -l >> "$work/ratio1"
  printf 'round %d: wrk -t1 -c64 %s req/s, volley 64 users %s req/s (%.3fx), volley threads=1 %s req/s (%.3fx)\n' \
    "$r" "$w" "$v" "$(echo "$v / $w" | bc -l)" "$v1" "$(echo "$v1 / $w" | bc -l)"
done
printf 'median: wrk %s, volley %s (%.3fx), volley threads=1 %s (%.3fx)\n' "$(median < "$work/wrk")" "$(median < "$work/volley")" \
  "$(median < "$work/ratio")" "$(median < "$work/volley1")" "$(median < "$work/ratio1")"

# HTTP/2: 64 users, each with its own connection (h2load: 64 clients, one stream each).
sed 's/^consoleInterval: 1h$/consoleInterval: 1h\nhttp: {version: 2}/' "$work/closed.yaml" > "$work/h2.yaml"
for r in $(seq 1 "$rounds"); do
  h=$(h2load -c64 -m1 -t1 -D"$seconds" "http://$addr/realtime/quotes/ACME" | awk '/^finished in/ {print $4}')
  v=$(target/release/volley run "$work/h2.yaml" --out "$work/out" | awk '/mean throughput/ {print $5}')
  echo "$h" >> "$work/h2load"; echo "$v" >> "$work/volley2"; echo "$v / $h" | bc -l >> "$work/ratio2"
  printf 'round %d: h2load -c64 -m1 -t1 %s req/s, volley 64 users HTTP/2 %s req/s (%.3fx)\n' "$r" "$h" "$v" "$(echo "$v / $h" | bc -l)"
done
printf 'median: h2load %s, volley HTTP/2 %s (%.3fx)\n' "$(median < "$work/h2load")" "$(median < "$work/volley2")" "$(median < "$work/ratio2")"

# Memory: 10,000 concurrent users, each pausing 1 s between requests, for 10 s.
cat > "$work/many.yaml" <<YAML
baseUrl: http://$addr
consoleInterval: 1h
http: {maxConnections: 10000}
scenarios:
  - name: many
    injection: [{constantConcurrentUsers: 10000, during: ${seconds}s}]
    steps: [{request: {name: quote, path: /realtime/quotes/ACME}}, {pause: 1s}]
YAML
ulimit -n 65536 2>/dev/null || true
rss=$( { /usr/bin/time -f '%M' target/release/volley run "$work/many.yaml" --out "$work/out" > "$work/many.out"; } 2>&1 | tail -1)
printf 'volley with 10,000 users pausing 1 s: peak RSS %d MB (goal <= 200 MB), %s\n' "$((rss / 1024))" \
  "$(awk '/request count/ {print $4" requests"}' "$work/many.out")"
python3 bench/goals.py volley "$rounds" "$work/ratio" "$work/ratio2" "$((rss / 1024))"
