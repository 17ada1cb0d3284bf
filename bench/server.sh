#!/usr/bin/env bash
# The server benchmark of BENCHMARKS.md: realtime under wrk with the production config and
# with the chatty config, against the same handlers on bare axum with no logging.
#
#   bench/server.sh [ROUNDS] [SECONDS]      (default 3 rounds of 10 s per setting)
#
# Every setting runs in every round (bare, production, chatty; each round starts with the next
# one), so ratios are taken within a round; the script prints each round, the medians, and the
# server's CPU time per request (user + system, every thread). Load stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release -q -p realtime
bin=target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/production.yaml" <<YAML
server:
  applicationConnectors:
    - type: http
      port: 0
      bindHost: 127.0.0.1
  adminConnectors:
    - type: http
      port: 0
  requestLog:
    appenders:
      - type: file
        currentLogFilename: $work/production/requests.log
        archivedLogFilenamePattern: $work/production/requests-%d-%i.log.gz
        maxFileSize: 50MiB
logging:
  level: INFO
  appenders:
    - type: file
      currentLogFilename: $work/production/app.log
      archivedLogFilenamePattern: $work/production/app-%d-%i.log.gz
      maxFileSize: 50MiB
YAML

# Starts "$@" with stdout to $1's log, waits for the address it prints; sets $pid and $addr.
start() {
  local name=$1; shift
  "$@" > "$work/$name.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    addr=$(grep -m1 'application listening on' "$work/$name.out" 2>/dev/null | sed 's#.*://##; s#0\.0\.0\.0#127.0.0.1#' || true)
    [ -n "$addr" ] && return 0
    sleep 0.1
  done
  echo "$name did not start:"; cat "$work/$name.out"; exit 1
}

stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# The server's CPU time (user + system, every thread) so far, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

# Loads the server; prints its req/s, and appends its CPU time per request (µs) to $work/cpu-$1.
load() {
  curl -fsS "http://$addr/realtime/quotes/ACME" >/dev/null
  local before after out
  before=$(ticks)
  out=$(wrk -t1 -c64 -d"${seconds}s" "http://$addr/realtime/quotes/ACME")
  after=$(ticks)
  echo "($after - $before) * 1000000 / $hz / $(awk '/requests in/ {print $1}' <<< "$out")" | bc -l >> "$work/cpu-$1"
  awk '/Requests\/sec/ {print $2}' <<< "$out"
}

# Runs one setting and records its req/s.
measure() {
  case $1 in
    bare)
      start bare "$bin/realtime-bare" 0
      bare[$r]=$(load bare) ;;
    production)
      rm -rf "$work/production"
      start production "$bin/realtime" server "$work/production.yaml"
      production[$r]=$(load production) ;;
    chatty)
      # The seed's "before": root DEBUG, console appender, console request log; stdout to a
      # file as a server's would be.
      start chatty "$bin/realtime" server examples/realtime/config/before.yaml --set http.port=0 --set http.adminPort=0 --set http.bindHost=127.0.0.1
      chatty[$r]=$(load chatty) ;;
  esac
  stop
}

declare -a bare production chatty
settings=(bare production chatty)
for r in $(seq 1 "$rounds"); do
  # Each round starts with the next setting, so that none always runs first or last (the
  # machine's state drifts within a round too).
  for i in 0 1 2; do
    measure "${settings[$(( (r - 1 + i) % 3 ))]}"
  done
  printf 'round %d: bare %s req/s, production %s req/s (%.3fx), chatty %s req/s (%.3fx)\n' "$r" \
    "${bare[$r]}" "${production[$r]}" "$(echo "${production[$r]} / ${bare[$r]}" | bc -l)" \
    "${chatty[$r]}" "$(echo "${chatty[$r]} / ${bare[$r]}" | bc -l)"
  echo "${production[$r]} / ${bare[$r]}" | bc -l >> "$work/ratio-production"
  echo "${chatty[$r]} / ${bare[$r]}" | bc -l >> "$work/ratio-chatty"
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf 'median of %d rounds: bare %s req/s, production %s req/s, chatty %s req/s\n' "$rounds" \
  "$(printf '%s\n' "${bare[@]}" | median)" "$(printf '%s\n' "${production[@]}" | median)" "$(printf '%s\n' "${chatty[@]}" | median)"
printf 'median CPU per request (the server'"'"'s user + system time / requests): bare %.2f µs, production %.2f µs, chatty %.2f µs\n' \
  "$(median < "$work/cpu-bare")" "$(median < "$work/cpu-production")" "$(median < "$work/cpu-chatty")"
printf 'median ratios to bare: production %.3fx (goal >= 0.92), chatty %.3fx (goal >= 0.85; the seed: 0.23)\n' \
  "$(median < "$work/ratio-production")" "$(median < "$work/ratio-chatty")"
