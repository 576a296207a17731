#!/usr/bin/env bash
# The Open POSIX conformance tests of mutexes, condition variables and rwlocks (part of
# the Linux Test Project), run without the library and under each configuration. A test
# whose result under a configuration differs from its result without the library is a
# failure, whatever that result is: glibc's behaviour is the contract, so a test that
# glibc itself fails (or does not support) must fail the same way under the library.
#
# Usage: scripts/open-posix-tests.sh --ltp DIR [--lib PATH] [--configs LIST] [--jobs N]
#            [--stress-seconds S] [--only REGEX]
#   --ltp       a checkout of https://github.com/linux-test-project/ltp (only its
#               testcases/open_posix_testsuite is used; nothing is installed)
#   --lib       the library [target/release/libspinmutex.so]
#   --configs   comma-separated, from: glibc futex spin kernel auto fair stats
#               [all of them]
#   --jobs      tests run at once [4]; each test runs its configurations one after
#               another, so that two runs of one test (which share its IPC names) never
#               overlap
#   --stress-seconds  how long each stress test runs before it is told to stop
#               (SIGUSR1) [10]; 0 leaves the stress tests out
#   --only      run only the tests whose name matches this extended regex
#
# A test that differs is run twice more without the library and under the
# configuration; it is reported only if it differs again. Builds go to
# target/open-posix/; each run's output to target/open-posix/logs/TEST.CONFIG.log.
# Exit status: 0 when every test gave the same result under every configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

LTP="" LIB="target/release/libspinmutex.so" CONFIGS="glibc,futex,spin,kernel,auto,fair,stats"
JOBS=4 STRESS=10 ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
    --ltp) LTP="$2"; shift 2 ;;
    --lib) LIB="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --stress-seconds) STRESS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
SUITE="$LTP/testcases/open_posix_testsuite"
if [ ! -d "$SUITE/conformance/interfaces" ]; then
    echo "open-posix-tests: --ltp DIR must be a checkout of the Linux Test Project" \
        "(git clone --depth 1 https://github.com/linux-test-project/ltp)" >&2
    exit 2
fi
for c in ${CONFIGS//,/ }; do
    case "$c" in
    glibc | futex | spin | kernel | auto | fair | stats) ;;
    *) echo "open-posix-tests: unknown configuration $c (glibc futex spin kernel auto fair stats)" >&2; exit 2 ;;
    esac
done
case "$STRESS$JOBS" in *[!0-9]*) echo "open-posix-tests: --jobs and --stress-seconds take whole numbers" >&2; exit 2 ;; esac
[ -f "$LIB" ] || { echo "open-posix-tests: $LIB is missing (cargo build --release)" >&2; exit 2; }
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
# The tests see only their configuration's settings.
unset LD_PRELOAD
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SPINMUTEX_')

OUT="$PWD/target/open-posix"
BIN="$OUT/bin" LOGS="$OUT/logs"
rm -rf "$LOGS" "$OUT/results"
mkdir -p "$BIN" "$LOGS" "$OUT/results"

# The build: every test program of the families (a file with a test_main, named like
# 1-1.c, or a stress test) is one binary, linked with the suite's own main.
echo "open-posix-tests: building the tests"
built=0 left_out=()
for f in "$SUITE"/conformance/interfaces/pthread_{mutex,cond,rwlock}*/*.c \
    "$SUITE"/functional/threads/condvar/*.c "$SUITE"/stress/threads/pthread_{mutex,cond}*/stress*.c; do
    grep -q 'main *(' "$f" || continue
    dir="$(basename "$(dirname "$f")")" name="$(basename "$f" .c)"
    test="${dir}_$name"
    [ -n "$ONLY" ] && ! [[ "$test" =~ $ONLY ]] && continue
    if [ ! -x "$BIN/$test" ] || [ "$f" -nt "$BIN/$test" ]; then
        cc -O1 -w -pthread -I "$SUITE/include" "$f" "$SUITE/lib/common.c" -o "$BIN/$test" \
            -lrt -lm 2>"$OUT/$test.err" || { left_out+=("$test"); rm -f "$BIN/$test"; continue; }
        rm -f "$OUT/$test.err"
    fi
    built=$((built + 1))
done
echo "open-posix-tests: $built tests; left out (did not build): ${left_out[*]:-none}"

export LIB LOGS STRESS OUT CONFIGS
# One run of test $1 under configuration $2 (none: without the library), its output in
# $LOGS/$1.$2.log; prints the exit status (124: a stress test that did not stop within
# 60 s of being told to, or a conformance test still running after 300 s).
run_one() {
    local test="$1" config="$2" envs=()
    case "$config" in
    none) ;;
    fair) envs=("LD_PRELOAD=$LIB" SPINMUTEX_STRATEGY=spin SPINMUTEX_FAIR=1) ;;
    stats) envs=("LD_PRELOAD=$LIB" SPINMUTEX_STRATEGY=spin SPINMUTEX_STATS=1
        SPINMUTEX_STATS_FILE=/dev/null) ;;
    *) envs=("LD_PRELOAD=$LIB" "SPINMUTEX_STRATEGY=$config") ;;
    esac
    local log="$LOGS/$test.$config.log" dir="$OUT/work/$test"
    mkdir -p "$dir" && cd "$dir"
    case "$test" in
    *_stress*)
        env "${envs[@]}" "$OUT/bin/$test" >"$log" 2>&1 &
        local pid=$!
        sleep "$STRESS"
        kill -USR1 "$pid" 2>/dev/null || true
        local i
        for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid"; wait "$pid" || true; echo 124
        else
            local rc=0; wait "$pid" || rc=$?; echo "$rc"
        fi ;;
    *) local rc=0; env "${envs[@]}" timeout -k 5 300 "$OUT/bin/$test" >"$log" 2>&1 || rc=$?; echo "$rc" ;;
    esac
}
# Every configuration of test $1, one after another: writes "CONFIG STATUS" lines to
# $OUT/results/$1, where a configuration that differed three times from none reads
# "CONFIG STATUS differs from NONE-STATUS".
run_test() {
    local test="$1" none config got tries
    none="$(run_one "$test" none)"
    echo "none $none" >"$OUT/results/$test"
    for config in ${CONFIGS//,/ }; do
        got="$(run_one "$test" "$config")"
        tries=1
        while [ "$got" != "$none" ] && [ "$tries" -lt 3 ]; do
            none="$(run_one "$test" none)"
            [ "$got" = "$none" ] && break
            got="$(run_one "$test" "$config")"
            tries=$((tries + 1))
        done
        if [ "$got" = "$none" ]; then echo "$config $got"; else echo "$config $got differs from $none"; fi
    done >>"$OUT/results/$test"
}
export -f run_one run_test

tests=()
for b in "$BIN"/*; do
    test="$(basename "$b")"
    [ -n "$ONLY" ] && ! [[ "$test" =~ $ONLY ]] && continue
    [ "$STRESS" -eq 0 ] && [[ "$test" == *_stress* ]] && continue
    tests+=("$test")
done
echo "open-posix-tests: ${#tests[@]} tests, configurations: none ${CONFIGS//,/ };" \
    "$JOBS at once, stress tests ${STRESS} s each"
started=$SECONDS
printf '%s\n' "${tests[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_test "$1"' run {}

# The summary: each configuration's count of tests whose result matched none's, then
# every difference.
differences=0
for config in ${CONFIGS//,/ }; do
    same=$(cat "$OUT"/results/* | awk -v c="$config" '$1 == c && NF == 2' | wc -l)
    echo "open-posix-tests: $config: $same of ${#tests[@]} as without the library"
done
for test in "${tests[@]}"; do
    while read -r config status rest; do
        if [ -n "$rest" ]; then
            echo "open-posix-tests: DIFFERS $test under $config: exit $status, ${rest#differs from } without the library (log: $LOGS/$test.$config.log)"
            differences=$((differences + 1))
        fi
    done <"$OUT/results/$test"
done
not_passed=$( (grep -l '^none [^0]' "$OUT"/results/* || true) | xargs -r -n 1 basename | tr '\n' ' ')
echo "open-posix-tests: not passed without the library (the reference all the same): ${not_passed:-none}"
echo "open-posix-tests: $differences differences, $((SECONDS - started)) s"
[ "$differences" -eq 0 ]
