#!/usr/bin/env bash
# Redis's own test suite (units that run its background and I/O threads, fork children
# and shut down on signals), run without the library and under each configuration. A
# configuration passes when every test that passes without the library passes under it.
# Redis is a program nobody here wrote: its I/O threads park on mutexes the main thread
# holds for as long as they should stay idle, jemalloc (built in) takes its arena locks
# with trylock first, and its servers end by SIGTERM through a handler of their own.
#
# Usage: scripts/redis-tests.sh --redis DIR [--lib PATH] [--configs LIST] [--units LIST]
#            [--io-threads N] [--clients N]
#   --redis     a built checkout of https://github.com/redis/redis (`make`); its
#               `runtest` needs tclsh (Debian: tcl)
#   --lib       the library [target/release/libspinmutex.so]
#   --configs   comma-separated, from: glibc futex spin kernel auto fair stats
#               [spin,kernel,auto,stats]
#   --units     comma-separated test units of Redis's tests/ [a set that runs threads]
#   --io-threads  the servers' io-threads [2]
#   --clients   test clients at once [2]
#
# A configuration that fails a test is run once more; it is reported only if it fails a
# test again. Each run's log goes to target/redis-tests/CONFIG.log.
# Exit status: 0 when every configuration passed.
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS="" LIB="target/release/libspinmutex.so" CONFIGS="spin,kernel,auto,stats" IO_THREADS=2 CLIENTS=2
UNITS="unit/lazyfree,unit/networking,unit/shutdown,unit/other,unit/info,unit/pause,unit/aofrw"
UNITS+=",unit/expire,unit/type/list,unit/memefficiency,unit/multi,unit/keyspace"
while [ $# -gt 0 ]; do
    case "$1" in
    --redis) REDIS="$2"; shift 2 ;;
    --lib) LIB="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --units) UNITS="$2"; shift 2 ;;
    --io-threads) IO_THREADS="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
if [ ! -x "$REDIS/runtest" ] || [ ! -x "$REDIS/src/redis-server" ]; then
    echo "redis-tests: --redis DIR must be a built checkout of Redis (git clone" \
        "https://github.com/redis/redis && make -C redis)" >&2
    exit 2
fi
command -v tclsh > /dev/null || { echo "redis-tests: Redis's tests need tclsh (apt-get install tcl)" >&2; exit 2; }
for c in ${CONFIGS//,/ }; do
    case "$c" in
    glibc | futex | spin | kernel | auto | fair | stats) ;;
    *) echo "redis-tests: unknown configuration $c (glibc futex spin kernel auto fair stats)" >&2; exit 2 ;;
    esac
done
case "$IO_THREADS$CLIENTS" in *[!0-9]*) echo "redis-tests: --io-threads and --clients take whole numbers" >&2; exit 2 ;; esac
[ -f "$LIB" ] || { echo "redis-tests: $LIB is missing (cargo build --release)" >&2; exit 2; }
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
OUT="$(pwd)/target/redis-tests"
mkdir -p "$OUT"
# The tests see only their configuration's settings.
unset LD_PRELOAD
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SPINMUTEX_')

ARGS=(--clients "$CLIENTS" --config io-threads "$IO_THREADS")
for u in ${UNITS//,/ }; do ARGS+=(--single "$u"); done

# run CONFIG: one run of the units under CONFIG (none: without the library); prints
# "OK ERR" (tests passed, tests failed or in error) and keeps the log.
run() {
    local config="$1" log="$OUT/$1.log" env=()
    case "$config" in
    none) ;;
    fair) env=(LD_PRELOAD="$LIB" SPINMUTEX_STRATEGY=spin SPINMUTEX_FAIR=1) ;;
    stats) env=(LD_PRELOAD="$LIB" SPINMUTEX_STATS=json SPINMUTEX_STATS_FILE="$OUT/stats.json") ;;
    *) env=(LD_PRELOAD="$LIB" SPINMUTEX_STRATEGY="$config") ;;
    esac
    rm -f "$OUT/stats.json"
    # The suite colours its output even into a file: the colours are dropped.
    (cd "$REDIS" && env "${env[@]}" ./runtest "${ARGS[@]}") 2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$log" || true
    local ok err
    ok=$(grep -ac '^\[ok\]' "$log" || true)
    err=$(grep -acE '^\[(err|exception|timeout)\]' "$log" || true)
    grep -aq 'All tests passed' "$log" || err=$((err > 0 ? err : 1))
    echo "$ok $err"
}

status=0
printf '%-8s %8s %8s  %s\n' config passed failed result
read -r base_ok base_err < <(run none)
printf '%-8s %8s %8s  %s\n' none "$base_ok" "$base_err" "the reference"
if [ "$base_err" -gt 0 ]; then
    echo "redis-tests: the tests fail without the library ($OUT/none.log): fix that first" >&2
    exit 1
fi
for c in ${CONFIGS//,/ }; do
    read -r ok err < <(run "$c")
    result="same as without the library"
    if [ "$err" -gt 0 ] || [ "$ok" -lt "$base_ok" ]; then
        cp "$OUT/$c.log" "$OUT/$c.first.log"
        read -r ok err < <(run "$c")
        if [ "$err" -gt 0 ] || [ "$ok" -lt "$base_ok" ]; then
            result="FAILED twice: $OUT/$c.log"
            status=1
        else
            result="passed when run again (first run: $OUT/$c.first.log)"
        fi
    fi
    if [ "$c" = stats ] && [ "$status" -eq 0 ]; then
        lines=$(wc -l < "$OUT/stats.json" 2> /dev/null || echo 0)
        whole=$(grep -c '^{.*}$' "$OUT/stats.json" 2> /dev/null || true)
        result+="; $lines statistics reports"
        if [ "$whole" != "$lines" ]; then
            result+=", $((lines - whole)) of them not whole: $OUT/stats.json"
            status=1
        fi
    fi
    printf '%-8s %8s %8s  %s\n' "$c" "$ok" "$err" "$result"
done
exit $status
