#!/bin/sh
# The uncontended cost of a lock+unlock pair under each strategy, against glibc without
# the preload, and the floor (bench/floor_preload.c), interleaved run by run:
#
#   bench/uncontended.sh [RUNS] [PAIRS] [MODE]
#
# (defaults: 11 runs of 5,000,000 pairs, MODE mutex; `read` or `write` time an rwlock's
# rdlock or wrlock + unlock instead, without the floor arm, which has no rwlock).
#
# Each run of bench/uncontended.c prints its fastest round in ns per pair; this prints
# per arm the median over the runs, the stddev in % of the mean, and the median's ratio
# to `direct` (glibc, no preload). Separate processes on a VM do not see the same
# machine, so each run also runs `uncontended ... paired` per arm: the arm's functions against
# glibc's own in one process, rounds alternating; the second table is the median over
# the runs of each process's median per-round ratio (`direct` there is glibc against
# itself: the method's bias). With valgrind installed it also counts instructions per
# pair (callgrind, the difference between 200,000 and 100,000 pairs).
# Needs: a release build (cargo build --release), cc.
set -eu
runs=${1:-11}
pairs=${2:-5000000}
mode=${3:-mutex}
root=$(cd "$(dirname "$0")/.." && pwd)
lib=$root/target/release/libspinmutex.so
[ -f "$lib" ] || { echo "uncontended.sh: build first: cargo build --release" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/uncontended" "$root/bench/uncontended.c" -ldl
cc -O2 -shared -fPIC -o "$tmp/floor.so" "$root/bench/floor_preload.c"

arms="direct glibc futex spin kernel"
[ "$mode" = mutex ] && arms="$arms floor"
one() { # arm, program args...
    arm=$1; shift
    case $arm in
    direct) "$@" ;;
    floor) LD_PRELOAD=$tmp/floor.so "$@" ;;
    *) SPINMUTEX_STRATEGY=$arm LD_PRELOAD=$lib "$@" ;;
    esac
}
for r in $(seq "$runs"); do
    for arm in $arms; do
        echo "$arm $(one "$arm" "$tmp/uncontended" "$pairs" 5 "$mode")" >>"$tmp/times"
        echo "$arm $(one "$arm" "$tmp/uncontended" $((pairs / 25 + 1)) 41 "$mode" paired)" >>"$tmp/paired.out"
    done
done

echo "ns per uncontended $mode lock+unlock pair: $runs interleaved runs of $pairs pairs (fastest of 5 rounds each)"
echo "$(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %8s %8s %8s\n' arm median stddev% 'x direct'
for arm in $arms; do
    grep "^$arm " "$tmp/times" | cut -d' ' -f2 | sort -g >"$tmp/$arm"
done
direct=$(awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}' "$tmp/direct")
for arm in $arms; do
    awk -v arm="$arm" -v base="$direct" '
        {v[NR]=$1; s+=$1; q+=$1*$1}
        END {
            med = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2
            mean = s/NR; var = (NR > 1) ? (q - NR*mean*mean)/(NR-1) : 0
            printf "%-8s %8.2f %7.1f%% %8.2f\n", arm, med, 100*sqrt(var > 0 ? var : 0)/mean, med/base
        }' "$tmp/$arm"
done

echo
echo "in one process, rounds alternating (uncontended ... paired, 41 rounds of $((pairs / 25 + 1)) pairs per arm and run):"
echo "the arm's functions / glibc's own, median of per-round ratios; over the $runs runs"
printf '%-8s %8s %8s %8s %8s %8s\n' arm median stddev% min max 'iqr/run'
for arm in $arms; do
    grep "^$arm " "$tmp/paired.out" | sort -k2 -g | awk -v arm="$arm" '
        {v[NR]=$2; s+=$2; q+=$2*$2; iqr+=$4-$3}
        END {
            med = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2
            mean = s/NR; var = (NR > 1) ? (q - NR*mean*mean)/(NR-1) : 0
            printf "%-8s %8.3f %7.1f%% %8.3f %8.3f %8.3f\n", arm, med, 100*sqrt(var > 0 ? var : 0)/mean, v[1], v[NR], iqr/NR
        }'
done

if command -v valgrind >/dev/null 2>&1; then
    echo
    echo "instructions per pair (callgrind)"
    for arm in $arms; do
        count() {
            one "$arm" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tmp/uncontended" "$1" 1 "$mode" \
                >/dev/null 2>&1
            awk '/^summary:/ {print $2}' "$tmp/cg.out"
        }
        a=$(count 100000)
        b=$(count 200000)
        printf '%-8s %8.1f\n' "$arm" "$(echo "$a $b" | awk '{print ($2-$1)/100000}')"
    done
fi
