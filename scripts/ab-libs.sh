#!/usr/bin/env bash
# A/B of library builds on one cell of the contention workload: each arm runs
# `spinmutex __workload` under its own libspinmutex.so, interleaved run by run, and the
# script prints each arm's runs, median and stddev (in % of the mean).
#
#   scripts/ab-libs.sh RUNS ARMS [workload options...]
#
# ARMS is a space-separated list of NAME=LIB[:STRATEGY] (STRATEGY defaults to auto),
# e.g. "base=/tmp/base.so kept=target/release/libspinmutex.so futex=/tmp/base.so:futex".
# Options after ARMS go to the workload (--threads, --load, --layout, --duration-ms;
# 300 ms unless given). With AB_LIBS_CSV=FILE, every run is appended to FILE as
# `cell,arm,run,ops_per_s`.
#
# Used for the variants of `auto` compared in docs/BENCHMARKS.md: `spinmutex bench`
# compares strategies of one build, this compares builds.
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '2,14p' "$0" >&2
    exit 2
fi
runs=$1
arms=$2
shift 2
case "$runs" in '' | *[!0-9]* | 0) echo "ab-libs: RUNS must be a whole number above 0, not '$runs'" >&2; exit 2 ;; esac
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/target/release/spinmutex"
[ -x "$bin" ] || { echo "ab-libs: $bin is missing (cargo build --release)" >&2; exit 2; }
args=("$@")
case " ${args[*]} " in *" --duration-ms "*) ;; *) args+=(--duration-ms 300) ;; esac
cell="${args[*]}"

declare -A results
for arm in $arms; do
    spec="${arm#*=}"
    lib="${spec%%:*}"
    [ -f "$lib" ] || { echo "ab-libs: arm ${arm%%=*}: no library at $lib" >&2; exit 2; }
done
for run in $(seq "$runs"); do
    for arm in $arms; do
        name="${arm%%=*}"
        spec="${arm#*=}"
        lib="${spec%%:*}"
        strategy=auto
        [ "$spec" != "$lib" ] && strategy="${spec#*:}"
        line=$(env SPINMUTEX_STRATEGY="$strategy" LD_PRELOAD="$lib" "$bin" __workload "${args[@]}")
        ops=$(grep -o 'ops_per_s=[0-9.]*' <<<"$line" | cut -d= -f2)
        results[$name]="${results[$name]:-} $ops"
        if [ -n "${AB_LIBS_CSV:-}" ]; then
            echo "\"$cell\",$name,$run,$ops" >>"$AB_LIBS_CSV"
        fi
    done
done
echo "== $cell ($runs runs per arm, interleaved)"
for arm in $arms; do
    name="${arm%%=*}"
    python3 - "$name" ${results[$name]} <<'EOF'
import statistics as st, sys
name, runs = sys.argv[1], [float(x) / 1e6 for x in sys.argv[2:]]
sd = 100 * st.pstdev(runs) / st.mean(runs) if st.mean(runs) else 0
print(f"{name}: median {st.median(runs):.2f} Mops/s, sd {sd:.0f}%, runs {' '.join(f'{x:.1f}' for x in runs)}")
EOF
done
