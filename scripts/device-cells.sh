#!/usr/bin/env bash
# Why glibc's own mutex led the 16-CPU grid where it did (docs/BENCHMARKS.md, "16 CPUs"):
# the cells it won, with the arms and the records that can tell the causes apart, in
# one bounded run for a many-core machine (2 minutes on a 2-CPU VM and on 16 CPUs, 3 with
# a base build):
#
#   scripts/device-cells.sh [OUT]
#
# Its first run on 16 CPUs (docs/BENCHMARKS.md, "the cells run") ruled out handoffs and
# the clock read; the next one names a build with bench/variants/glibc-wait-rule.patch
# in DEVICE_CELLS_BASE (the same page says how to build it).
#
# Arms, interleaved run by run, 5 runs of 300 ms per arm and cell:
#   none       no preload (glibc against itself: what forwarding through the preload costs)
#   glibc      the preload forwarding every call to glibc (the bench's reference arm)
#   futex      sleep at once, with handoffs (the defaults)
#   futex-nh   sleep at once, no handoffs (SPINMUTEX_HANDOFF_AFTER=0, _WAIT=0): glibc's
#              protocol in this library's code, but for who takes a free lock as LOCKED
#   futex-nw   handoffs after lost wake-ups only (SPINMUTEX_HANDOFF_WAIT=0): no clock
#              read when a thread goes to sleep
#   spin, auto as in the grid
#   spin-nh    spin without handoffs: a lock handed to a sleeper waits out its wake-up
#   futex-base, spin-base, auto-base: the same under the library at DEVICE_CELLS_BASE,
#              when that names one (an earlier build, or one with a variant from
#              bench/variants/, carried beside this one)
# Then one run per cell of `futex`, `spin` and `auto` with SPINMUTEX_STATS=json (sleeps,
# handoffs; `auto`'s mode and the acquisitions each mode served), and one of `auto`
# traced at info,spinmutex::auto=debug (every experiment's phases and verdict).
#
# OUT (default: $OUT, else ./device-cells-out) receives machine.txt, runs.csv (every
# run's workload line as CSV, with its cell, arm and run), stats.json (one report per
# line), trace.jsonl and summary.txt (scripts/device-cells-summary.py OUT, also printed).
# Carry target/release as for device-grid.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-cells-out}}
mkdir -p "$out"
bin=$PWD/target/release/spinmutex
lib=$PWD/target/release/libspinmutex.so
if ! "$bin" --version >/dev/null 2>&1 || ! LD_PRELOAD="$lib" /bin/true 2>/dev/null; then
    echo "device-cells: building (the carried build does not run here)" >&2
    cargo build --release >"$out/build.txt" 2>&1 || { tail -n 30 "$out/build.txt" >&2; exit 1; }
fi
{ date -u; uname -a; ldd --version 2>&1 | head -n 1; echo "nproc: $(nproc)"; lscpu | head -n 20; } >"$out/machine.txt"

# The cells glibc won on the 16-CPU VM, and one each of spin's and futex's as controls.
cells="shared:8:0 shared:16:0 shared:32:0 shared:32:3 alone:8:100 alone:32:100 shared:16:100 alone:8:3 alone:4:100"
arms="none glibc futex futex-nh futex-nw spin spin-nh auto"
base=${DEVICE_CELLS_BASE:-}
if [ -n "$base" ]; then
    base=$(realpath "$base") || exit 1
    arms="$arms futex-base spin-base auto-base"
fi

# Runs the workload of CELL (LAYOUT:THREADS:LOAD, with @MS for runs other than 300 ms)
# under ARM with extra environment (KEY=VALUE ...).
workload() {
    local cell=$1 arm=$2
    shift 2
    local ms=300
    case $cell in *@*) ms=${cell#*@} cell=${cell%@*} ;; esac
    local layout=${cell%%:*} rest=${cell#*:}
    local threads=${rest%%:*} load=${rest#*:}
    local -a env=("$@")
    case $arm in
    none) ;;
    futex-nh) env+=(SPINMUTEX_STRATEGY=futex SPINMUTEX_HANDOFF_AFTER=0 SPINMUTEX_HANDOFF_WAIT=0 LD_PRELOAD="$lib") ;;
    futex-nw) env+=(SPINMUTEX_STRATEGY=futex SPINMUTEX_HANDOFF_WAIT=0 LD_PRELOAD="$lib") ;;
    spin-nh) env+=(SPINMUTEX_STRATEGY=spin SPINMUTEX_HANDOFF_AFTER=0 SPINMUTEX_HANDOFF_WAIT=0 LD_PRELOAD="$lib") ;;
    *-base) env+=(SPINMUTEX_STRATEGY="${arm%-base}" LD_PRELOAD="$base") ;;
    *) env+=(SPINMUTEX_STRATEGY="$arm" LD_PRELOAD="$lib") ;;
    esac
    env "${env[@]}" timeout -s KILL 10 "$bin" __workload --threads "$threads" --load "$load" \
        --layout "$layout" --duration-ms "$ms"
}

# The workload prints one line of key=value pairs; the CSV keeps every key, in its order.
header=
# Runs ROUNDS rounds of every cell in CELLS under every arm in ARMS, into runs.csv.
rounds() {
    local rounds=$1 cells=$2 arms=$3 run cell arm line
    for run in $(seq "$rounds"); do
        for cell in $cells; do
            for arm in $arms; do
                line=$(workload "$cell" "$arm") || { echo "device-cells: $cell $arm run $run failed" >&2; continue; }
                if [ -z "$header" ]; then
                    header="cell,arm,run,$(tr ' ' '\n' <<<"$line" | cut -d= -f1 | paste -sd,)"
                    echo "$header" >"$out/runs.csv"
                fi
                echo "$cell,$arm,$run,$(tr ' ' '\n' <<<"$line" | cut -d= -f2 | paste -sd,)" >>"$out/runs.csv"
            done
        done
        echo "device-cells: round $run of $rounds done ($cells)" >&2
    done
}
rounds 5 "$cells" "$arms"
# auto's CPU per acquisition exceeded 1.10x spin's in these cells of 300 ms runs: in runs
# of 2 s, its first experiment and the check after it weigh a seventh as much.
rounds 3 "alone:16:10@2000 alone:32:10@2000" "spin auto"

# A line {"cell": ..., "arm": ...} before each report and each trace says whose it is.
for cell in $cells; do
    for arm in futex spin auto; do
        echo "{\"cell\": \"$cell\", \"arm\": \"$arm\"}" >>"$out/stats.json"
        workload "$cell" "$arm" SPINMUTEX_STATS=json SPINMUTEX_STATS_FILE="$out/stats.json" >/dev/null
    done
    echo "{\"cell\": \"$cell\", \"arm\": \"auto\"}" >>"$out/trace.jsonl"
    workload "$cell" auto SPINMUTEX_TRACE=info,spinmutex::auto=debug SPINMUTEX_TRACE_FORMAT=json \
        SPINMUTEX_TRACE_FILE="$out/trace.jsonl" >/dev/null
done
python3 scripts/device-cells-summary.py "$out" | tee "$out/summary.txt"
