#!/usr/bin/env bash
# glibc's own nptl tests under the preload: every test of nptl/ and sysdeps/pthread/ of
# the installed glibc that builds outside glibc's tree, run without the preload and with
# libspinmutex.so under each configuration, in one table. The lock tests (mutex,
# condition variable, robust, PI, PP, C11 mtx_*/cnd_*, rwlock, timed lock) run under every
# configuration; the others (threads, cancellation, fork, signals, TLS, semaphores,
# barriers, ...), which lock in passing, under the strategies with code of their own and
# with statistics on.
#
# The tests come from Debian's glibc-source package (/usr/src/glibc/glibc-VERSION.tar.xz,
# VERSION being the installed glibc's): at each run the script extracts nptl/,
# sysdeps/pthread/ and support/ into a cache under target/ (nothing of glibc is kept in
# the repository), builds glibc's test support library and the tests against the system
# glibc with the small stand-ins for glibc-internal headers in scripts/glibc-shim/, and
# runs them. The build is kept in the cache until the script, the stand-ins or the
# compiler change.
#
# A (test, configuration) fails the run only when the test passes without the preload
# and fails with it: a test that fails on stock glibc is reported ("fails" in the "none"
# column) and never fails the run. A failing (test, configuration) is run once more,
# alone, before it counts (the table marks a cell that passed only then). Each test
# keeps glibc's own timeout (TIMEOUT in its source, scaled by TIMEOUTFACTOR, which the
# test driver reads; 2 unless the environment sets it) and its exit codes (77:
# unsupported).
#
# Usage: scripts/glibc-tests.sh [--lib PATH] [--configs LIST] [--jobs N] [--only REGEX]
#                               [--cache DIR] [--list]
#   --lib      the preload library (default target/release/libspinmutex.so)
#   --configs  comma-separated, from: glibc futex spin kernel auto fair stats
#              (default: all six; "none", the run without the preload, always runs)
#   --jobs     tests run at once (default 4: most of them sleep)
#   --only     run only the tests whose name matches this extended regex
#   --cache    where glibc's files, the build and the logs go (default target/glibc-tests)
#   --list     build, then list the tests selected and those left out, and stop
# Exit status: 0 when no test fails with the preload that passes without it, 1 when one
# does, 2 for a usage or setup error (glibc-source missing, build of the support library
# failed).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="$ROOT/scripts/glibc-shim"

# ---------------------------------------------------------------------------------
# One run of one test under one configuration (the script calls itself for each, from
# xargs): writes "STATUS MILLISECONDS EXIT" to $RESULTS/TEST.CONFIG.result and the
# test's output to TEST.CONFIG.log.
if [ "${1:-}" = "__run_one" ]; then
    test="$2" config="$3"
    log="$RESULTS/$test.$config.log"
    work="$(mktemp -d "$RESULTS/work.XXXXXX")"
    # glibc runs its tests from their source directory, and the cancellation tests open
    # its Makefile there (any readable file would do).
    cp "$SRC/nptl/Makefile" "$work/Makefile"
    env_args=()
    case "$config" in
    none) ;;
    glibc | futex | spin | kernel | auto) env_args=("LD_PRELOAD=$LIB" "SPINMUTEX_STRATEGY=$config") ;;
    fair) env_args=("LD_PRELOAD=$LIB" SPINMUTEX_STRATEGY=spin SPINMUTEX_FAIR=1) ;;
    stats) env_args=("LD_PRELOAD=$LIB" SPINMUTEX_STRATEGY=spin SPINMUTEX_STATS=1
        "SPINMUTEX_STATS_FILE=$RESULTS/$test.$config.stats") ;;
    *) echo "unknown configuration $config" >&2; exit 2 ;;
    esac
    # glibc's Makefiles give a few tests an environment or arguments of their own.
    read -r -a test_env <<<"$(cat "$BIN/$test.env" 2>/dev/null)"
    # Arguments as make gives them to the shell: quoted words stay whole.
    mapfile -d '' -t test_args < <(xargs -r printf '%s\0' <"$BIN/$test.args" 2>/dev/null)
    start=$(date +%s%N)
    (cd "$work" && exec timeout -k 5 "$HARD_LIMIT" env LD_LIBRARY_PATH="$BIN" "${test_env[@]}" "${env_args[@]}" \
        "$BIN/$test" "${test_args[@]}") >"$log" 2>&1 </dev/null
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    rm -rf "$work"
    if [ $rc -eq 0 ]; then
        status=pass
    elif [ $rc -eq 77 ]; then
        status=unsupported
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ] || grep -q '^Timed out' "$log"; then
        status=timeout
    else
        status=fail
    fi
    echo "$status $ms $rc" >"$RESULTS/$test.$config.result"
    exit 0
fi

# ---------------------------------------------------------------------------------
# Options.

LIB="$ROOT/target/release/libspinmutex.so"
CONFIGS="glibc,futex,spin,kernel,auto,fair,stats"
JOBS=4
ONLY=""
CACHE="$ROOT/target/glibc-tests"
LIST_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
    --lib) LIB="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --cache) CACHE="$2"; shift 2 ;;
    --list) LIST_ONLY=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "glibc-tests: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
read -r -a CONFIG_LIST <<<"${CONFIGS//,/ }"
for c in "${CONFIG_LIST[@]}"; do
    case "$c" in
    glibc | futex | spin | kernel | auto | fair | stats) ;;
    *) echo "glibc-tests: unknown configuration $c (glibc futex spin kernel auto fair stats)" >&2; exit 2 ;;
    esac
done
if [ "$LIST_ONLY" -eq 0 ] && [ ! -f "$LIB" ]; then
    echo "glibc-tests: $LIB is missing (cargo build --release)" >&2
    exit 2
fi
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"

# Beyond the driver's own timeout (TIMEOUT × TIMEOUTFACTOR), a bound for tests whose
# TIMEOUT is effectively none (the lock loop's). Read before the SPINMUTEX_ variables
# are cleared below: this one is the script's, not the library's.
HARD_LIMIT="${SPINMUTEX_GLIBC_TESTS_HARD_LIMIT:-600}"
case "$HARD_LIMIT" in
    '' | *[!0-9]* | 0)
        echo "glibc-tests: SPINMUTEX_GLIBC_TESTS_HARD_LIMIT=$HARD_LIMIT is not a whole number of seconds above 0" >&2
        exit 2 ;;
esac

# The tests see only the settings of their configuration.
unset LD_PRELOAD
while read -r var; do unset "$var"; done < <(compgen -e | grep '^SPINMUTEX_')
export TIMEOUTFACTOR="${TIMEOUTFACTOR:-2}"

# ---------------------------------------------------------------------------------
# glibc's sources, for the installed glibc.

VERSION="$(getconf GNU_LIBC_VERSION | awk '{print $2}')"
TARBALL="/usr/src/glibc/glibc-$VERSION.tar.xz"
if [ ! -f "$TARBALL" ]; then
    echo "glibc-tests: $TARBALL is missing: install Debian's glibc-source package (glibc $VERSION)" >&2
    exit 2
fi
SRC="$CACHE/glibc-$VERSION"
mkdir -p "$CACHE"
if [ ! -f "$SRC/.extracted" ] || [ "$TARBALL" -nt "$SRC/.extracted" ]; then
    rm -rf "$SRC"
    echo "glibc-tests: extracting the nptl tests and the test support library from $TARBALL"
    tar -xJf "$TARBALL" -C "$CACHE" --wildcards "glibc-$VERSION/nptl/*" \
        "glibc-$VERSION/sysdeps/pthread/*" "glibc-$VERSION/support/*" \
        "glibc-$VERSION/test-skeleton.c" || { echo "glibc-tests: extraction failed" >&2; exit 2; }
    touch "$SRC/.extracted"
fi

# ---------------------------------------------------------------------------------
# The build: glibc's support library, then every test of the families above.

BUILD="$CACHE/build-$VERSION"
BIN="$BUILD/bin"
key="$( (cat "$0" "$SHIM"/*.h; cc --version | head -n 1) | cksum)"
if [ "$(cat "$BUILD/.key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$BUILD"
fi
mkdir -p "$BUILD/support" "$BIN"
CFLAGS=(-O2 -g -std=gnu11 -pthread -w -include "$SHIM/config.h" -I "$SHIM" -I "$SRC"
    -I "$SRC/support" -I "$SRC/nptl" -I "$SRC/sysdeps/pthread")
# The compiler's arguments, one a line, for the parallel compiles below.
printf '%s\n' "${CFLAGS[@]}" >"$BUILD/cflags"
export BUILD BIN
# Compiles "$1" (a file of glibc's), then the rest of the arguments, with CFLAGS; the
# compiler's messages go to "$2.err" ($2 being the output).
COMPILE='mapfile -t flags <"$BUILD/cflags"; src="$1" out="$2"; shift 2
    cc "${flags[@]}" "$src" "$@" -o "$out" 2>"$out.err" || rm -f "$out"'

if [ ! -f "$BUILD/libsupport.a" ]; then
    echo "glibc-tests: building glibc $VERSION's test support library"
    # Every file of the library but its own tests, the container tools, support_paths.c
    # (below) and two files that other files include. A file that needs glibc's build
    # tree (a few do) is left out: a test that needs it then fails to link and is listed
    # as left out.
    for f in "$SRC"/support/*.c; do
        name="$(basename "$f" .c)"
        case "$name" in
        tst-* | *container* | links-dso-* | test-driver | test-run-command | support_paths | \
            support_quote_blob_main | support_test_compare_string_main) continue ;;
        esac
        echo "$f $BUILD/support/$name.o -c"
    done | xargs -P "$JOBS" -L 1 bash -c "$COMPILE" compile
    # Where the build and installed trees are, for support_paths.c.
    bash -c "$COMPILE" compile "$SRC/support/support_paths.c" "$BUILD/support/support_paths.o" -c \
        -DSRCDIR_PATH="\"$SRC\"" -DOBJDIR_PATH="\"$BUILD\"" \
        -DOBJDIR_ELF_LDSO_PATH="\"$(readlink -f /lib64/ld-linux-x86-64.so.2)\"" -DINSTDIR_PATH='"/usr"' \
        -DLIBDIR_PATH='"/usr/lib/x86_64-linux-gnu"' -DBINDIR_PATH='"/usr/bin"' -DSBINDIR_PATH='"/usr/sbin"' \
        -DSLIBDIR_PATH='"/lib/x86_64-linux-gnu"' -DROOTSBINDIR_PATH='"/sbin"' \
        -DCOMPLOCALEDIR_PATH='"/usr/lib/locale"'
    for needed in support_test_main support_paths; do
        if [ ! -f "$BUILD/support/$needed.o" ]; then
            echo "glibc-tests: $needed.c of glibc's test support library did not build:" >&2
            cat "$BUILD/support/$needed.o.err" >&2
            exit 2
        fi
    done
    ar rcs "$BUILD/libsupport.a" "$BUILD"/support/*.o
fi

# The candidates: every test in nptl/ and sysdeps/pthread/ (named as a test in glibc's
# Makefiles: other files there are parts that tests include). The lock tests are those
# of these families.
LOCK_FAMILIES='^tst-(mutex|robust|cond|mtx-|cnd-|rwlock|abstime|pthread-timedlock|pthread-mutexattr)'
MAKEFILES=("$SRC/nptl/Makefile" "$SRC/sysdeps/pthread/Makefile")
declare -A LEFT_OUT=()
CANDIDATES=()
MODULES=()
for f in "$SRC"/nptl/tst-*.c "$SRC"/sysdeps/pthread/tst-*.c; do
    name="$(basename "$f" .c)"
    grep -qw -- "$name" "${MAKEFILES[@]}" || continue
    if [[ "$name" =~ (mod[0-9a-z]?|aux)$ ]]; then
        MODULES+=("$f") # whichever tests --only picks, for the tests that load them
        continue
    fi
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then continue; fi
    case "$name" in
    *-static) LEFT_OUT[$name]="statically linked: a preload does not apply" ;;
    *-time64) LEFT_OUT[$name]="the 64-bit time_t variant of ${name%-time64}: the same program on x86-64" ;;
    *) CANDIDATES+=("$f") ;;
    esac
done
# The modules some tests load (NAME.so, found through LD_LIBRARY_PATH=$BIN), then the
# tests, each with its own link flags from the Makefiles (LDFLAGS-NAME).
for f in "${MODULES[@]}"; do
    name="$(basename "$f" .c)"
    [ -f "$BIN/$name.so" ] || echo "$f $BIN/$name.so -shared -fPIC"
done | xargs -r -P "$JOBS" -L 1 bash -c "$COMPILE" compile
for f in "${CANDIDATES[@]}"; do
    name="$(basename "$f" .c)"
    ldflags="$(sed -n "s/^LDFLAGS-$name *= *//p" "${MAKEFILES[@]}")"
    # (No blank at the end of a line: xargs -L would join it to the next.)
    [ -x "$BIN/$name" ] || echo "$f $BIN/$name $BUILD/libsupport.a -lrt${ldflags:+ $ldflags}"
done | xargs -r -P "$JOBS" -L 1 bash -c "$COMPILE" compile
TESTS=()
# NAME-ARGS of glibc's Makefiles, with the make variables the tests' arguments use
# expanded: another test's arguments, the test program itself, the build directory (the
# directory the test runs in, here).
makefile_args() {
    local args
    args="$(sed -n "s/^$1-ARGS *[:+]\{0,1\}= *//p" "${MAKEFILES[@]}")"
    if [[ "$args" =~ ^\$\((tst-[^\)]*)-ARGS\)$ ]]; then
        makefile_args "${BASH_REMATCH[1]}" "$1"
        return
    fi
    args="${args//\$(host-test-program-cmd)/$BIN/${2:-$1}}"
    echo "${args//\$(objpfx)/}"
}
for f in "${CANDIDATES[@]}"; do
    name="$(basename "$f" .c)"
    if [ ! -x "$BIN/$name" ]; then
        why="$(grep -m1 -E 'error|undefined reference' "$BIN/$name.err" | sed 's/^[^ ]*: //')"
        case "$why" in
        *pthreadP.h* | *atomic.h*) why="uses glibc's internals (needs glibc's build tree: $why)" ;;
        *) why="does not build outside glibc's tree: $why" ;;
        esac
        LEFT_OUT[$name]="$why"
        continue
    fi
    TESTS+=("$name")
    # A test's environment and arguments from glibc's Makefiles (NAME-ENV, NAME-ARGS).
    sed -n "s/^$name-ENV *[:+]\{0,1\}= *//p" "${MAKEFILES[@]}" >"$BIN/$name.env"
    makefile_args "$name" >"$BIN/$name.args"
done
echo "$key" >"$BUILD/.key"
mapfile -t TESTS < <(printf '%s\n' "${TESTS[@]}" | sort -V)

print_left_out() {
    echo "Left out (${#LEFT_OUT[@]}):"
    for name in $(printf '%s\n' "${!LEFT_OUT[@]}" | sort); do
        echo "  $name: ${LEFT_OUT[$name]}"
    done
}

if [ "$LIST_ONLY" -eq 1 ]; then
    echo "Selected (${#TESTS[@]}): ${TESTS[*]}"
    print_left_out
    exit 0
fi

# ---------------------------------------------------------------------------------
# The runs.

# Tests that take 10 s or more without the preload (up to minutes: the lock loop creates
# 300,000 threads) run under fewer configurations, to keep the whole run in CI's budget;
# so do the tests that are not lock tests (below). The table's footer says which.
declare -A LONG=(
    [tst-pthread-timedlock-lockloop]="spin kernel auto"
    [tst-robust-fork]="futex spin kernel auto"
    [tst-mutex10]="futex spin kernel auto"
    [tst-cond16]="futex spin kernel auto"
    [tst-cond17]="futex spin kernel auto"
    [tst-cond18]="futex spin kernel auto"
    [tst-rwlock-pwn]="futex spin kernel auto"
    [tst-rwlock-tryrdlock-stall]="futex spin kernel auto"
    [tst-rwlock-trywrlock-stall]="futex spin kernel auto"
    [tst-create-detached]="spin kernel auto"
)
# The tests that are not lock tests: the strategies with code of their own, and
# statistics, which have signal handlers of their own and wrap sigaction and signal.
# (Under every configuration, on glibc 2.36 with the library of ab60b26, they gave the
# results they give without the preload; running each of them under all would double
# the run.)
OTHERS_UNDER="spin kernel auto stats"
# The configurations a test is limited to, if it is (nothing: every one).
limited_to() {
    if [ -n "${LONG[$1]+x}" ]; then
        echo "${LONG[$1]}"
    elif ! [[ "$1" =~ $LOCK_FAMILIES ]]; then
        echo "$OTHERS_UNDER"
    fi
}
RESULTS="$CACHE/results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
export RESULTS LIB HARD_LIMIT SRC

configs_of() {
    local limit c
    limit="$(limited_to "$1")"
    echo none
    for c in "${CONFIG_LIST[@]}"; do
        if [ -z "$limit" ] || [[ " $limit " == *" $c "* ]]; then
            echo "$c"
        fi
    done
}

echo "glibc-tests: glibc $VERSION, ${#TESTS[@]} tests, configurations: none ${CONFIG_LIST[*]};" \
    "$JOBS at a time, TIMEOUTFACTOR=$TIMEOUTFACTOR; logs in $RESULTS"
started=$(date +%s)
{
    # The long ones first, so that they do not end the run alone.
    for name in "${TESTS[@]}"; do
        [ -n "${LONG[$name]+x}" ] || continue
        for c in $(configs_of "$name"); do echo "$name $c"; done
    done
    for name in "${TESTS[@]}"; do
        [ -z "${LONG[$name]+x}" ] || continue
        for c in $(configs_of "$name"); do echo "$name $c"; done
    done
} | xargs -P "$JOBS" -L 1 bash "$0" __run_one

status_of() { cut -d' ' -f1 "$RESULTS/$1.$2.result" 2>/dev/null || echo missing; }

# A failure, with the preload or without, runs once more, alone.
declare -A RERUN=()
for name in "${TESTS[@]}"; do
    for c in $(configs_of "$name"); do
        case "$(status_of "$name" "$c")" in
        fail | timeout | missing)
            if [ "$c" = none ] || [ "$(status_of "$name" none)" = pass ] ||
                [ "$(status_of "$name" none)" = unsupported ]; then
                cp "$RESULTS/$name.$c.log" "$RESULTS/$name.$c.first.log" 2>/dev/null
                echo "glibc-tests: $name under $c: $(status_of "$name" "$c"); running it again, alone"
                bash "$0" __run_one "$name" "$c"
                RERUN[$name.$c]=1
            fi ;;
        esac
    done
done
elapsed=$(($(date +%s) - started))

# ---------------------------------------------------------------------------------
# The table.

COLUMNS_=(none "${CONFIG_LIST[@]}")
width=0
for name in "${TESTS[@]}"; do [ ${#name} -gt $width ] && width=${#name}; done
printf "\n%-${width}s" "test"
for c in "${COLUMNS_[@]}"; do printf " %-8s" "$c"; done
echo
FAILED=()
PASSED_ON_RERUN=()
declare -A COUNT=()
for name in "${TESTS[@]}"; do
    base="$(status_of "$name" none)"
    printf "%-${width}s" "$name"
    for c in "${COLUMNS_[@]}"; do
        if [ ! -f "$RESULTS/$name.$c.result" ]; then
            cell="-"
        else
            s="$(status_of "$name" "$c")"
            case "$s" in
            pass)
                cell=ok
                if [ -n "${RERUN[$name.$c]+x}" ]; then
                    cell="ok/r"
                    PASSED_ON_RERUN+=("$name under $c")
                fi ;;
            unsupported) cell=unsup ;;
            fail | timeout)
                if [ "$c" = none ]; then
                    cell="fails"
                    [ "$s" = timeout ] && cell="timeout"
                elif [ "$base" = pass ] || [ "$base" = unsupported ]; then
                    cell="FAIL"
                    [ "$s" = timeout ] && cell="TIMEOUT"
                    FAILED+=("$name.$c")
                else
                    cell="$s*"
                fi ;;
            *) cell="?" ;;
            esac
        fi
        COUNT[$cell]=$((${COUNT[$cell]:-0} + 1))
        printf " %-8s" "$cell"
    done
    echo
done
echo
echo "ok: passed; ok/r: failed, then passed when run again alone; unsup: the test says it"
echo "does not apply here (exit 77); fails/timeout under none: the test fails without the"
echo "preload too, so its results with the preload (marked *) never fail the run;"
echo "FAIL/TIMEOUT: passes without the preload, fails with it, twice; -: not run."
echo "none: no preload; glibc, futex, spin, kernel, auto: SPINMUTEX_STRATEGY; fair: spin with"
echo "SPINMUTEX_FAIR=1; stats: spin with SPINMUTEX_STATS=1 (reports to a file)."
others=0
for name in "${TESTS[@]}"; do
    if [ -n "${LONG[$name]+x}" ]; then
        echo "$name runs under none and ${LONG[$name]} only (it takes 10 s or more)."
    elif [ -n "$(limited_to "$name")" ]; then
        others=$((others + 1))
    fi
done
if [ $others -gt 0 ]; then
    echo "The $others other tests that are not lock tests run under none and $OTHERS_UNDER only."
fi
if [ ${#PASSED_ON_RERUN[@]} -gt 0 ]; then
    echo "Failed once, then passed alone (ok/r; its first output is in the logs, *.first.log):"
    printf '  %s\n' "${PASSED_ON_RERUN[@]}"
fi
print_left_out
cells=""
for k in $(printf '%s\n' "${!COUNT[@]}" | sort); do cells="$cells $k=${COUNT[$k]}"; done
echo "glibc-tests: ${#TESTS[@]} tests, ${#COLUMNS_[@]} configurations, ${elapsed} s of runs; cells:$cells"

if [ ${#FAILED[@]} -gt 0 ]; then
    echo
    for key in "${FAILED[@]}"; do
        name="${key%.*}" c="${key##*.}"
        read -r s ms rc <"$RESULTS/$name.$c.result"
        echo "FAILED: $name under $c: $s (exit $rc after $ms ms); last lines of its output:"
        tail -n 8 "$RESULTS/$name.$c.log" | sed 's/^/    /'
    done
    echo "glibc-tests: ${#FAILED[@]} (test, configuration) pairs fail with the preload and pass without it"
    exit 1
fi
echo "glibc-tests: every test that passes without the preload passes under every configuration"
exit 0
