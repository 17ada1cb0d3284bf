#!/usr/bin/env bash
# The logging cost curve of BENCHMARKS.md ("Logging cost curve"): the same handler writing N
# INFO lines a request (three fields each) to a file, through each Rust logger in its lossy
# and lossless modes where it has both, against the same server logging nothing, in the same
# run (bench/logcurve: ferrowizard's logging, tracing-subscriber fmt, tracing-appender
# non_blocking, log4rs, slog with slog-async, fern). For each round and N the configs take
# turns (the first rotating); each ratio is to that round's bare server, the median of the
# rounds' ratios. The lines in each file are counted and set beside the lines emitted, so
# that a lossy logger's drops show beside its ratio. The server runs alone on the last core;
# volley (closed model, 32 users) on the others. Exits 1 when a goal of bench/goals.py
# ("curve") is missed or the run is too short to judge. Load stays on 127.0.0.1.
#
#   bench/logcurve.sh [ROUNDS] [SECONDS]     (default 3 rounds of 5 s per config and N)
#   NS="1 5 20 70" CONFIGS="bare ferrowizard-lossless ..." bench/logcurve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-5}
ns=${NS:-1 5 20 70}
configs=(${CONFIGS:-bare ferrowizard-lossless ferrowizard-lossy fmt non-blocking-lossless non-blocking-lossy log4rs slog-lossless slog-lossy fern})
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
cargo build --release -q -p logcurve
cargo build --release -q -p volley --bin volley
last=$(($(nproc) - 1))
others=0-$((last > 0 ? last - 1 : 0))
echo "cores: $(nproc); the server on core $last, volley (32 closed-model users) on $others"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=$(mktemp)
for ((r = 0; r < rounds; r++)); do
  for n in $ns; do
    count=${#configs[@]}
    for ((k = 0; k < count; k++)); do
      config=${configs[$(((r + k) % count))]}
      logger=${config%-lossless}
      logger=${logger%-lossy}
      flags=()
      [[ $config == *-lossless ]] && flags=(--lossless)
      file="$work/$config-$n.log"
      rm -f "$file"
      out="$work/server.out"
      taskset -c "$last" target/release/logcurve --logger "$logger" "${flags[@]}" \
        --lines "$n" --file "$file" >"$out" &
      pid=$!
      for _ in $(seq 100); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
      addr=$(sed -n 's/^listening on //p' "$out")
      [ -n "$addr" ] || { echo "logcurve $config did not start"; exit 1; }
      cat >"$work/load.yaml" <<YAML
baseUrl: http://$addr
maxDuration: $((seconds + 30))s
consoleInterval: 1h
scenarios:
  - name: curve
    injection: [{constantConcurrentUsers: 32, during: ${seconds}s}]
    steps: [{request: {name: work, path: /work}}]
YAML
      taskset -c "$others" target/release/volley run "$work/load.yaml" --out "$work/out" >/dev/null
      kill -TERM "$pid"
      wait "$pid"
      rps=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["global"]["ok"]["count"]/r["durationSeconds"],1))' "$work/out/results.json")
      emitted=$(sed -n 's/^emitted \([0-9]*\) lines.*/\1/p' "$out")
      written=$( [ -f "$file" ] && wc -l <"$file" || echo 0 )
      echo "$r $n $config $rps $emitted $written" | tee -a "$rows"
    done
  done
done
python3 bench/goals.py curve "$rows"
