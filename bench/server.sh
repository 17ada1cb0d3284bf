#!/usr/bin/env bash
# The server benchmark of BENCHMARKS.md: realtime under wrk with the production config and
# with the chatty config, against the same handlers on bare axum with no logging.
#
# Goals (bench/goals.py), the median of each setting's ratios to bare across rounds:
# production >= 0.92x, chatty >= 0.85x (the other settings take production apart and have no
# goal of their own). Exits 1 when one is missed, or when the run is too short to judge (fewer
# than 3 rounds, or rounds under 5 s). MODE=instructions counts instructions to compare builds,
# judges nothing and exits 0 once it has counted.
#
#   bench/server.sh [ROUNDS] [SECONDS]      (default 3 rounds of 10 s per setting)
#   SETTINGS="bare quiet no-request-log production" bench/server.sh 7 10
#
#   MODE=profile SETTINGS="bare quiet production" bench/server.sh 3 10
#
# samples instead the server's threads with `perf record -e cpu-clock` during each load (installed
# if absent, as Debian's linux-perf) and prints, per setting, where its time goes in ns a
# request (worker threads' user and kernel time, other threads), and the functions whose time
# a request differs most from bare's. Slower per function than instructions, but in real time:
# what a cache miss or a locked instruction costs shows here, not there.
#
# Settings: bare (realtime-bare), production, chatty (the default three), and two that take
# production apart: quiet (ferrowizard with no appender and no request log: the server's own
# cost) and no-request-log (production without its request log).
#
# Every setting runs in every round (each round starts with the next one), so ratios are taken
# within a round; the script prints each round, the medians, and the server's CPU time per
# request (user + system, every thread). Load stays on 127.0.0.1.
#
#   OTHER=/path/to/an/older/realtime SETTINGS="bare production other-production" bench/server.sh 9 8
#
# adds settings `other-production` and `other-chatty`: the same configs served by another build
# of `realtime` (build it from the commit to compare, copy the binary out of target/), so that
# two builds are compared in alternate rounds against the same bare.
#
#   SET="server.traceContext.enabled=true" OTHER_SET="..." bench/server.sh
#
# passes each KEY=VALUE of SET as `--set` to the ferrowizard settings (production, quiet,
# no-request-log), and those of OTHER_SET to other-production: a key measured on and off.
#
#   MODE=instructions bench/server.sh     (SETTINGS as above; rounds and seconds unused)
#
# counts instead the user-space instructions the server executes per request, every thread,
# under valgrind's callgrind (installed if absent): counters zeroed after a 2 s warm-up, then
# wrk -t1 -c8 -d8s. Slow (~50x) but nearly free of this machine's noise: the same build gives
# counts within ~1 % of each other (what the threads do while idle varies), where req/s moves
# by 10 % from one round to the next. It leaves out the kernel's share (about half of a
# request's CPU here) and waiting. KEEP=DIR keeps each setting's callgrind profile there
# (callgrind-SETTING, for callgrind_annotate --inclusive=yes).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-10}
[ "${MODE:-load}" = instructions ] || python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
read -r -a settings <<< "${SETTINGS:-bare production chatty}"
[ "${settings[0]}" = bare ] || { echo "SETTINGS must start with bare (the ratios' base)"; exit 2; }
for s in "${settings[@]}"; do
  case $s in other-*) [ -x "${OTHER:-}" ] || { echo "$s needs OTHER=/path/to/another/realtime"; exit 2; } ;; esac
done

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release -q -p realtime
bin=target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A ferrowizard config: $1 its name, $2 whether it has a request log, $3 whether the
# application log has its file appender.
config() {
  local request_log="[]" app_log="[]"
  [ "$2" = yes ] && request_log="
      - type: file
        currentLogFilename: $work/$1/requests.log
        archivedLogFilenamePattern: $work/$1/requests-%d-%i.log.gz
        maxFileSize: 50MiB"
  [ "$3" = yes ] && app_log="
    - type: file
      currentLogFilename: $work/$1/app.log
      archivedLogFilenamePattern: $work/$1/app-%d-%i.log.gz
      maxFileSize: 50MiB"
  cat > "$work/$1.yaml" <<YAML
server:
  applicationConnectors:
    - type: http
      port: 0
      bindHost: 127.0.0.1
  adminConnectors:
    - type: http
      port: 0
  requestLog:
    appenders: $request_log
logging:
  level: INFO
  appenders: $app_log
YAML
}
config production yes yes
config no-request-log no yes
config quiet no no

mode=${MODE:-load}
runner=()
if [ "$mode" = instructions ]; then
  command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
  runner=(valgrind --tool=callgrind "--callgrind-out-file=$work/callgrind.%p")
fi
if [ "$mode" = profile ]; then
  command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
fi

# Starts "$@" with stdout to $1's log, waits for the address it prints; sets $pid and $addr.
start() {
  local name=$1; shift
  "${runner[@]}" "$@" > "$work/$name.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
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

# Loads the server; appends its req/s to $work/rps-$1 and its CPU time per request (µs) to
# $work/cpu-$1.
load() {
  # A warm-up request, tried again for a few seconds: on a machine this busy, a server that
  # printed its address can take a moment to answer.
  for try in $(seq 1 50); do
    curl -fsS "http://$addr/realtime/quotes/ACME" >/dev/null 2>&1 && break
    [ "$try" = 50 ] && { echo "$1 does not answer on $addr:"; cat "$work/$1.out"; exit 1; }
    sleep 0.1
  done
  local before after out
  before=$(ticks)
  local sampler=""
  if [ "$mode" = profile ]; then
    perf record -q -e cpu-clock -F 4000 -p "$pid" -o "$work/perf.data" -- sleep "$seconds" 2>/dev/null &
    sampler=$!
  fi
  out=$(wrk -t1 -c64 -d"${seconds}s" "http://$addr/realtime/quotes/ACME")
  after=$(ticks)
  if [ -n "$sampler" ]; then
    wait "$sampler" || true
    # Samples by thread kind (W: the runtime's workers), user (.) or kernel (k), function.
    perf report -i "$work/perf.data" --no-children --sort comm,sym --stdio -F sample,comm,sym 2>/dev/null |
      awk '/^ *[0-9]+ / { kind = ($2 ~ /worker/ ? "W" : "other") $3; i = index($0, "] "); print $1 "\t" kind "\t" substr($0, i + 2) }' >> "$work/samples-$1"
    awk '/requests in/ {print $1}' <<< "$out" >> "$work/requests-$1"
  fi
  echo "($after - $before) * 1000000 / $hz / $(awk '/requests in/ {print $1}' <<< "$out")" | bc -l >> "$work/cpu-$1"
  awk '/Requests\/sec/ {print $2}' <<< "$out" >> "$work/rps-$1"
}

# Under callgrind: appends the server's instructions per request to $work/ir-$1.
count() {
  wrk -t1 -c8 -d2s "http://$addr/realtime/quotes/ACME" >/dev/null
  callgrind_control -z "$pid" >/dev/null
  local out dump
  out=$(wrk -t1 -c8 -d8s "http://$addr/realtime/quotes/ACME")
  callgrind_control -d "$pid" >/dev/null
  dump=$(ls -t "$work"/callgrind.*.1 | head -n 1)
  echo "$(callgrind_annotate "$dump" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}') / $(awk '/requests in/ {print $1}' <<< "$out")" | bc >> "$work/ir-$1"
  [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$dump" "$KEEP/callgrind-$1"; }
  rm -f "$work"/callgrind.*
}

# The binary serving setting $1: this tree's, or $OTHER for `other-*`.
server() {
  case $1 in
    other-*) echo "$OTHER" ;;
    *) echo "$bin/realtime" ;;
  esac
}

# Runs one setting.
measure() {
  case $1 in
    bare)
      start bare "$bin/realtime-bare" 0 ;;
    chatty | other-chatty)
      # The 2014 DropWizard logging report's "before": root DEBUG, console appender, console request log; stdout to a
      # file as a server's would be.
      start "$1" "$(server "$1")" server examples/realtime/config/before.yaml --set http.port=0 --set http.adminPort=0 --set http.bindHost=127.0.0.1 ;;
    production | no-request-log | quiet | other-production)
      local config=${1#other-} list=${SET:-} sets=()
      [ "$1" = other-production ] && list=${OTHER_SET:-}
      for kv in $list; do sets+=(--set "$kv"); done
      rm -rf "${work:?}/$config"
      start "$1" "$(server "$1")" server "$work/$config.yaml" "${sets[@]}" ;;
    *)
      echo "unknown setting $1"; exit 2 ;;
  esac
  if [ "$mode" = instructions ]; then count "$1"; else load "$1"; fi
  stop
}

last() { tail -n 1 "$work/rps-$1"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

if [ "$mode" = instructions ]; then
  for s in "${settings[@]}"; do measure "$s"; done
  line="user-space instructions per request:"
  for s in "${settings[@]}"; do
    line+=$(printf ' %s %d (%.3fx bare)' "$s" "$(cat "$work/ir-$s")" "$(echo "$(cat "$work/ir-$s") / $(cat "$work/ir-bare")" | bc -l)")
  done
  echo "$line"
  exit 0
fi

# Per setting: ns a request by thread kind, then the functions that differ most from bare's.
profile_report() {
  local ns_per_sample=250000 # 4000 Hz
  for s in "${settings[@]}"; do
    local requests
    requests=$(awk '{n += $1} END {print n}' "$work/requests-$s")
    awk -F'\t' -v r="$requests" -v k="$ns_per_sample" '{t[$2 "\t" $3] += $1} END {for (x in t) printf "%s\t%.1f\n", x, t[x] * k / r}' "$work/samples-$s" > "$work/ns-$s"
  done
  for s in "${settings[@]}"; do
    awk -F'\t' -v s="$s" '{t[$1] += $3} END {printf "%s, ns a request: workers user %.0f, workers kernel %.0f, other threads %.0f\n", s, t["W[.]"], t["W[k]"], t["other[.]"] + t["other[k]"]}' "$work/ns-$s"
  done
  for s in "${settings[@]:1}"; do
    echo "$s against bare, the 25 functions that differ most (ns a request: difference, bare, $s):"
    awk -F'\t' 'NR == FNR {b[$1 "\t" $2] = $3; next} {a[$1 "\t" $2] = $3} END {for (x in b) if (!(x in a)) a[x] = 0; for (x in a) printf "%+.0f\t%.0f\t%.0f\t%s\n", a[x] - b[x], b[x], a[x], x}' "$work/ns-bare" "$work/ns-$s" |
      awk -F'\t' '{d = $1 < 0 ? -$1 : $1; print d "\t" $0}' | sort -t$'\t' -k1,1gr | head -n 25 | cut -f2- |
      awk -F'\t' '{printf "  %7s %7s %7s  %-6s %s\n", $1, $2, $3, $4, substr($5, 1, 110)}'
  done
}

n=${#settings[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    measure "${settings[$(( (r - 1 + i) % n ))]}"
  done
  line="round $r: bare $(last bare) req/s"
  for s in "${settings[@]:1}"; do
    ratio=$(echo "$(last "$s") / $(last bare)" | bc -l)
    echo "$ratio" >> "$work/ratio-$s"
    line+=$(printf ', %s %s req/s (%.3fx)' "$s" "$(last "$s")" "$ratio")
  done
  echo "$line"
done

line="median of $rounds rounds:"
for s in "${settings[@]}"; do line+=" $s $(median < "$work/rps-$s") req/s"; done
echo "$line"
line="median CPU per request (the server's user + system time / requests):"
for s in "${settings[@]}"; do line+=$(printf ' %s %.2f µs' "$s" "$(median < "$work/cpu-$s")"); done
echo "$line"
[ "$mode" = profile ] && profile_report
goal() { case $1 in production) echo " (goal >= 0.92)" ;; chatty) echo " (goal >= 0.85; the 2014 DropWizard logging report: 0.23)" ;; esac; }
line="median ratios to bare:"
args=()
for s in "${settings[@]:1}"; do
  line+=$(printf ' %s %.3fx%s' "$s" "$(median < "$work/ratio-$s")" "$(goal "$s")")
  args+=("$s=$work/ratio-$s")
done
echo "$line"
python3 bench/goals.py ratios "$rounds" "${args[@]}"
