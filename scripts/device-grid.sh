#!/usr/bin/env bash
# The contention grid where a 2-CPU machine cannot take it: 2-32 threads on a machine with
# many cores, glibc, futex, spin and auto interleaved, then the scenarios. Made to run
# once, unattended, inside a bounded remote call: its timeouts bound the benchmarks to
# 9 minutes (the whole script took 6 on a 2-CPU VM and on a 16-CPU one), plus a build if needed:
#
#   scripts/device-grid.sh [OUT]
#
# OUT (default: $OUT, else ./device-grid-out) receives machine.txt (lscpu, kernel, glibc,
# the pause cost), grid.csv and grid.txt (the bench's CSV and report), scenarios.csv and
# scenarios.txt. It uses target/release as built here when that runs on this machine
# (carry target/release/spinmutex and target/release/libspinmutex.so), else builds it.
# A step that runs out of time is stopped with SIGTERM: `spinmutex bench` then writes the
# runs it has, marked interrupted, and the script goes on to the next step.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-grid-out}}
mkdir -p "$out"
bin=target/release/spinmutex
lib=target/release/libspinmutex.so

if ! "$bin" --version >/dev/null 2>&1 || ! LD_PRELOAD="$PWD/$lib" /bin/true 2>/dev/null; then
    echo "device-grid: building (the carried build does not run here)" >&2
    cargo build --release >"$out/build.txt" 2>&1 || { tail -n 30 "$out/build.txt" >&2; exit 1; }
fi

{
    date -u
    uname -a
    ldd --version 2>&1 | head -n 1
    echo "nproc: $(nproc)"
    lscpu
    echo
    echo "pause: $(SPINMUTEX_STRATEGY=glibc LD_PRELOAD="$PWD/$lib" "$bin" __workload --threads 1 --load 10 \
        --duration-ms 100 | tr ' ' '\n' | grep '^pause_ns=')"
} >"$out/machine.txt" 2>&1

# 40 cells x 4 arms x 5 runs of 300 ms: 5 minutes on a 2-CPU VM and on a 16-CPU one.
timeout -s TERM 390 "$bin" bench --threads 2,4,8,16,32 --loads 0,3,10,100 --layout alone,shared \
    --runs 5 --duration-ms 300 -s glibc,futex,spin,auto --scenarios none --without-control \
    --csv "$out/grid.csv" >"$out/grid.txt" 2>&1
echo "device-grid: grid exit $?" >&2

# mixed needs threads to meet on its slow lock: with a thread per CPU on each lock it is
# the scenario 2 CPUs could not show. 3 runs of 1 s per arm: 1 minute on a 2-CPU VM.
timeout -s TERM 150 "$bin" bench --no-grid --scenarios idle-owner,cpu-quota,mixed --runs 3 \
    --duration-ms 1000 -s glibc,futex,spin,auto --without-control \
    --csv "$out/scenarios.csv" >"$out/scenarios.txt" 2>&1
echo "device-grid: scenarios exit $?" >&2
