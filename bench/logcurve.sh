#!/usr/bin/env bash
# The logging cost curve of BENCHMARKS.md ("Logging cost curve"): the same handler writing N
# INFO lines a request (three fields each) to a file, through each logger in its lossy and
# lossless modes where it has both, against the same server logging nothing, in the same run.
# The Rust loggers (bench/logcurve): ferrowizard's logging, tracing-subscriber fmt,
# tracing-appender non_blocking, log4rs, slog with slog-async, fern. The JVM stack of the 2014
# DropWizard logging report (bench/logcurve/jvm): Jetty 9.4 and logback 1.2's AsyncAppender
# from Debian's packages, lossy (its defaults) and lossless (discardingThreshold 0), and a
# bare Jetty. For each round and N the configs take turns (the first rotating); each ratio is
# to that round's bare server of its own stack, the median of the rounds' ratios. The lines in
# each file are counted and set beside the lines emitted, so that a lossy logger's drops show
# beside its ratio. Every config gets the same warm-up (the JVM's JIT needs one) before it is
# measured. Exits 1 when a goal of bench/goals.py ("curve") is missed or the run is too short
# to judge. Load stays on 127.0.0.1. The rows go to target/logcurve/rows.txt and the chart to
# target/logcurve/curve.svg (bench/logcurve_chart.py).
#
# PIN=shared (the default): the server and volley (32 closed-model users) share every core,
# as the 2014 report's Gatling and DropWizard did and the experiment does: the handler, the
# logger's writer thread and the generator run side by side. PIN=split: the server alone on
# the last core, volley on the others.
#
#   bench/logcurve.sh [ROUNDS] [SECONDS]     (default 3 rounds of 5 s per config and N)
#   NS="1 5 20 70" CONFIGS="bare ferrowizard-lossless jvm-bare jvm-lossy ..." bench/logcurve.sh
#   OTHER=/tmp/logcurve-before CONFIGS="bare ferrowizard-lossless other-ferrowizard-lossless" ...
#     (`other-` configs run the OTHER build of bench/logcurve, in the same rounds)
#   WARMUP=2 (seconds of load before each measured run)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-5}
ns=${NS:-1 5 20 70}
configs=(${CONFIGS:-bare ferrowizard-lossless ferrowizard-lossy fmt non-blocking-lossless non-blocking-lossy log4rs slog-lossless slog-lossy fern jvm-bare jvm-lossy jvm-lossless})
warmup=${WARMUP:-2}
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
cargo build --release -q -p logcurve
cargo build --release -q -p volley --bin volley
if [[ " ${configs[*]} " == *" other-"* ]] && [ ! -x "${OTHER:-}" ]; then
  echo "other- configs need OTHER=path to another build of target/release/logcurve"; exit 1
fi
cores=$(nproc)
last=$((cores - 1))
case ${PIN:-shared} in
  shared) server_cpus=0-$last; volley_cpus=0-$last
    echo "cores: $cores; the server and volley (32 closed-model users) share all of them, unpinned" ;;
  split) server_cpus=$last; volley_cpus=0-$((last > 0 ? last - 1 : 0))
    echo "cores: $cores; the server alone on core $last, volley (32 closed-model users) on $volley_cpus" ;;
  *) echo "PIN=${PIN}: expected shared or split"; exit 1 ;;
esac
jvm=target/logcurve/jvm
if [[ " ${configs[*]} " == *" jvm-"* ]]; then
  java_dir=/usr/share/java
  needed=(jetty9-server jetty9-util jetty9-http jetty9-io servlet-api slf4j-api logback-classic logback-core)
  missing=0
  for jar in "${needed[@]}"; do [ -f "$java_dir/$jar.jar" ] || missing=1; done
  command -v javac >/dev/null || missing=1
  if [ $missing = 1 ]; then
    echo "installing Jetty 9.4, logback and a JDK from Debian's packages"
    sudo=$( [ "$(id -u)" = 0 ] || echo sudo )
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libjetty9-java liblogback-java default-jdk-headless >/dev/null
  fi
  classpath=$jvm$(printf ":$java_dir/%s.jar" "${needed[@]}")
  mkdir -p "$jvm"
  javac -d "$jvm" -cp "$classpath" bench/logcurve/jvm/LogCurve.java
  version() { ls "$java_dir/$1"-[0-9]*.jar | sed "s|.*/$1-||; s|\.jar\$||" | head -1; }
  echo "JVM: $(java -version 2>&1 | head -1); Jetty $(version jetty9-server); logback $(version logback-classic)"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p target/logcurve
rows=target/logcurve/rows.txt
: >"$rows"
# load SECONDS OUT: volley's closed-model load on the server at $addr.
load() {
  cat >"$work/load.yaml" <<YAML
baseUrl: http://$addr
maxDuration: $(($1 + 30))s
consoleInterval: 1h
scenarios:
  - name: curve
    injection: [{constantConcurrentUsers: 32, during: ${1}s}]
    steps: [{request: {name: work, path: /work}}]
YAML
  taskset -c "$volley_cpus" target/release/volley run "$work/load.yaml" --out "$2" >/dev/null
}
for ((r = 0; r < rounds; r++)); do
  for n in $ns; do
    count=${#configs[@]}
    for ((k = 0; k < count; k++)); do
      config=${configs[$(((r + k) % count))]}
      file="$work/$config-$n.log"
      rm -f "$file"
      out="$work/server.out"
      case $config in
        jvm-*)
          mode=${config#jvm-}
          lines=$n
          [ "$mode" = bare ] && { mode=lossy; lines=0; }
          taskset -c "$server_cpus" java -Dlogback.configurationFile="bench/logcurve/jvm/logback-$mode.xml" \
            -Dlogcurve.file="$file" -cp "$classpath" LogCurve --lines "$lines" >"$out" &
          ;;
        *)
          binary=target/release/logcurve
          [[ $config == other-* ]] && binary=$OTHER
          logger=${config#other-}
          logger=${logger%-lossless}
          logger=${logger%-lossy}
          flags=()
          [[ $config == *-lossless ]] && flags=(--lossless)
          taskset -c "$server_cpus" "$binary" --logger "$logger" "${flags[@]}" \
            --lines "$n" --file "$file" >"$out" &
          ;;
      esac
      pid=$!
      for _ in $(seq 300); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.05; done
      addr=$(sed -n 's/^listening on //p' "$out")
      [ -n "$addr" ] || { echo "logcurve $config did not start"; cat "$out"; exit 1; }
      [ "$warmup" -gt 0 ] && load "$warmup" "$work/warmup"
      load "$seconds" "$work/out"
      kill -TERM "$pid"
      # The JVM exits 143 on SIGTERM once its shutdown hook has run; the count says it ran.
      wait "$pid" || true
      rps=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["global"]["ok"]["count"]/r["durationSeconds"],1))' "$work/out/results.json")
      emitted=$(sed -n 's/^emitted \([0-9]*\) lines.*/\1/p' "$out")
      [ -n "$emitted" ] || { echo "logcurve $config stopped without its count"; cat "$out"; exit 1; }
      written=$( [ -f "$file" ] && wc -l <"$file" || echo 0 )
      # Gone before the next config runs: a file's dirty pages left in the page cache would be
      # written back to disk during the next runs, on the cores they measure.
      rm -f "$file"
      echo "$r $n $config $rps $emitted $written" | tee -a "$rows"
    done
  done
done
python3 bench/logcurve_chart.py "$rows" target/logcurve/curve.svg
echo "rows: $rows; chart: target/logcurve/curve.svg"
python3 bench/goals.py curve "$rows"
