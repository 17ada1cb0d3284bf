#!/usr/bin/env bash
# The database benchmark of BENCHMARKS.md: the orders service's read-by-key (GET /orders/{id},
# a random one of 1,000 rows) under wrk, on plain axum, with its pool chosen per setting:
#   bare            a bare sqlx pool of the same size, sqlx's defaults: it pings a connection
#                   before lending it;
#   bare-unchecked  the same without the ping, as ferrowizard-db's pool lends unless
#                   checkConnectionOnBorrow says otherwise;
#   ferrowizard     ferrowizard-db's pool: Database::acquire and Database::timed, so the wait
#                   timer, pending gauge, query timer, span and outage check;
#   untimed         ferrowizard-db's pool taken directly (Database::pool), none of those.
# ferrowizard against bare-unchecked is the goal's ratio (>= 0.95x requests/s); against bare,
# what sqlx's default ping costs; against untimed, the metrics' cost on their own.
#
# All settings share one PostgreSQL, started here from the system's binaries in a temporary
# folder (as the postgres user when run as root) and stopped at the end. Every setting runs in
# every round, the first setting rotating, and ratios are taken within a round; the medians
# across rounds are printed. Exits 1 when the goal is missed or the run is too short to judge
# (fewer than 3 rounds, or rounds under 5 s). Load stays on 127.0.0.1.
#
#   bench/db.sh [ROUNDS] [SECONDS]      (default 7 rounds of 10 s per setting)
#   OTHER=/path/to/an/older/orders-pool-bench bench/db.sh 7 10
#
# adds the setting other-ferrowizard: the ferrowizard setting served by another build (copy
# target/release/orders-pool-bench out before rebuilding), to compare two builds in alternate
# rounds against the same bare pools.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
seconds=${2:-10}
python3 bench/goals.py enough "$rounds" "$seconds" || exit 1
settings=(bare bare-unchecked ferrowizard untimed)
[ -n "${OTHER:-}" ] && settings+=(other-ferrowizard)
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
bin=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")")
[ -x "$bin/postgres" ] || { echo "PostgreSQL's binaries not found: apt-get install postgresql"; exit 2; }
cargo build --release -q -p orders --bins
work=$(mktemp -d)
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; as_pg=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  "${as_pg[@]}" "$bin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"${as_pg[@]}" "$bin/initdb" -D "$work/data" -U postgres --auth=trust >/dev/null
"${as_pg[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/pg.log" -w \
  -o "-p $port -c listen_addresses=127.0.0.1 -k $work -c max_connections=100" start >/dev/null
psql() { "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
psql -d postgres -c "CREATE DATABASE orders"
url="postgres://postgres@127.0.0.1:$port/orders"
cat > "$work/config.yaml" <<YAML
logging: {level: WARN}
database: {url: "$url", migrations: examples/orders/migrations}
YAML
target/release/orders db migrate "$work/config.yaml" >/dev/null
psql -d orders -c "INSERT INTO accounts VALUES ('a', 'bench');
  INSERT INTO orders SELECT lpad(i::text, 16, '0'), 'a', 'widget', i FROM generate_series(1, 1000) i;"
cat > "$work/random.lua" <<'LUA'
request = function()
  return wrk.format(nil, "/orders/" .. string.format("%016d", math.random(1, 1000)))
end
LUA
app_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
results="$work/results"
: > "$results"
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#settings[@]}; k++)); do
    s=${settings[$(((r + k) % ${#settings[@]}))]}
    binary=target/release/orders-pool-bench
    [ "$s" = other-ferrowizard ] && binary=$OTHER
    "$binary" --pool "${s#other-}" --url "$url" --port "$app_port" --size 8 >/dev/null &
    server=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$app_port/orders/0000000000000001" >/dev/null && break; sleep 0.1; done
    wrk -t1 -c32 -d2s -s "$work/random.lua" "http://127.0.0.1:$app_port" >/dev/null
    rps=$(wrk -t1 -c32 -d"${seconds}s" -s "$work/random.lua" "http://127.0.0.1:$app_port" | awk '/Requests\/sec/ {print $2}')
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
    echo "$r $s $rps" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for r, s, rps in rows:
    by.setdefault(int(r), {})[s] = float(rps)
def med(xs): return statistics.median(xs)
names = [s for s in ("bare", "bare-unchecked", "ferrowizard", "untimed", "other-ferrowizard") if s in by[0]]
for s in names:
    print(f"{s:15} median {med([v[s] for v in by.values()]):10.0f} req/s")
def ratio(a, b): return med([v[a] / v[b] for v in by.values()])
fw = ratio("ferrowizard", "bare-unchecked")
print(f"ferrowizard / bare-unchecked  {fw:.3f}x (goal >= 0.95x)")
print(f"ferrowizard / bare            {ratio('ferrowizard', 'bare'):.3f}x (sqlx's default ping on borrow)")
print(f"ferrowizard / untimed         {ratio('ferrowizard', 'untimed'):.3f}x (the metrics' cost on their own)")
if "other-ferrowizard" in names:
    print(f"other-ferrowizard / bare-unchecked  {ratio('other-ferrowizard', 'bare-unchecked'):.3f}x (the other build)")
    print(f"ferrowizard / other-ferrowizard     {ratio('ferrowizard', 'other-ferrowizard'):.3f}x")
sys.exit(0 if fw >= 0.95 else 1)
PY
