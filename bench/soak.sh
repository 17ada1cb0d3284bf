#!/usr/bin/env bash
# A soak: realtime under about 70% of its capacity (volley, 64 users throttled) for a long run, its
# request log lossless and rotated every minute. Samples the service once a minute (RSS, open
# files, CPU per request) and checks at the end that the request log (current file and every
# archive) has one line per request the service answered.
#
#   bench/soak.sh [MINUTES]      (default 30, at least 15)
#
# Goals (bench/goals.py): after the first 5 minutes (warm-up), RSS and open files each sample
# within 10% of the warm-up's last; CPU per request with no drift past 10% (the mean of the last
# 5 minutes against the first 5 after the warm-up, two windows that do not overlap); every
# minute serves requests, and none is KO; the request log has exactly one line per request
# answered. A minute's CPU per request on a shared virtual machine swings by about 10% either
# way (the hypervisor's steal, the clock's frequency); what a soak looks for is a trend. The
# load runs half a minute past the last sample, so that every sample is taken under load.
# Exits 1 when a goal is missed, or when MINUTES is under 15 (too short to judge).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
python3 bench/goals.py enough-soak "$minutes" || exit 1
cargo build --release -q -p realtime -p volley
work=$(mktemp -d)
pid="" volley=""
trap 'kill $pid $volley 2>/dev/null || true; rm -rf "$work"' EXIT
shopt -s nullglob
cat > "$work/realtime.yaml" <<YAML
server:
  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]
  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]
  requestLog:
    appenders:
      - type: file
        currentLogFilename: $work/logs/requests.log
        archivedLogFilenamePattern: $work/logs/requests-%d{yyyy-MM-dd-HH-mm}.log.gz
        archivedFileCount: 0
logging:
  level: INFO
  appenders:
    - type: file
      currentLogFilename: $work/logs/app.log
      archivedLogFilenamePattern: $work/logs/app-%d{yyyy-MM-dd-HH-mm}.log.gz
      archivedFileCount: 0
YAML
target/release/realtime server "$work/realtime.yaml" > "$work/realtime.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  addr=$(grep -m1 'application listening' "$work/realtime.out" 2>/dev/null | sed 's#.*://##' || true)
  admin=$(grep -m1 'admin listening' "$work/realtime.out" 2>/dev/null | sed 's#.*://##' || true)
  [ -n "$addr" ] && [ -n "$admin" ] && break
  sleep 0.1
done
scenario() { # INJECTION [RPS]
  local throttle=""
  [ -n "${2:-}" ] && throttle="throttle: [{jumpToRps: $2}]"
  cat <<YAML
baseUrl: http://$addr
consoleInterval: 1h
maxDuration: $((minutes + 5))m
http: {requestTimeout: 10s}
$throttle
scenarios:
  - name: soak
    injection: [$1]
    steps: [{request: {name: quote, path: /realtime/quotes/ACME}}]
YAML
}
scenario "{constantConcurrentUsers: 64, during: 10s}" > "$work/capacity.yaml"
target/release/volley run "$work/capacity.yaml" --out "$work/capacity" > /dev/null
capacity=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['global']['ok']['count'] / d['durationSeconds'])" "$work/capacity/results.json")
rate=$(python3 -c "print(round(0.7 * $capacity))")
echo "capacity $capacity req/s (64 closed-model users, 10 s); soak at $rate req/s for $minutes min"
served() { curl -s "http://$admin/metrics" | python3 -c "import json,sys; print(json.load(sys.stdin)['timers']['ferrowizard.requests']['count'])"; }
sample() { # MINUTE
  local rss fds ticks requests
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  requests=$(served)
  echo "$1 $rss $fds $ticks $requests" >> "$work/samples"
}
# 64 users throttled to the rate: the generator's cost per request stays that of the capacity run.
scenario "{constantConcurrentUsers: 64, during: $((minutes * 60 + 30))s}" "$rate" > "$work/soak.yaml"
target/release/volley run "$work/soak.yaml" --out "$work/soak" > "$work/volley.out" &
volley=$!
start=$(date +%s)
sample 0
for m in $(seq 1 "$minutes"); do
  # To fixed times from the start: the samples' own time does not add up over a long run.
  wait_s=$((start + 60 * m - $(date +%s)))
  [ "$wait_s" -le 0 ] || sleep "$wait_s"
  sample "$m"
done
wait "$volley"
sleep 1
final=$(served)
kill -TERM "$pid"
wait "$pid" || true
hz=$(getconf CLK_TCK)
verdict=0
python3 bench/goals.py soak "$work/samples" "$hz" || verdict=1
# The application's requests (the admin side's, this script's samples, are logged too).
archived=("$work"/logs/requests-*.log.gz)
lines=$( { cat "$work"/logs/requests.log; [ ${#archived[@]} -eq 0 ] || zcat "${archived[@]}"; } | grep -c '"GET /realtime/' || true)
archives=${#archived[@]}
echo "request-log lines: $lines (current file and $archives archives); requests the service answered: $final ($([ "$lines" = "$final" ] && echo equal || echo NOT equal))"
[ "$lines" = "$final" ] || { echo "GOAL MISSED: the request log has $lines lines for $final requests"; verdict=1; }
grep -E "request count|KO|timeout" "$work/volley.out" | head -5 || true
ko=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['global']['ko']['count'])" "$work/soak/results.json")
[ "$ko" = 0 ] || { echo "GOAL MISSED: $ko requests KO (goal 0)"; verdict=1; }
exit "$verdict"
