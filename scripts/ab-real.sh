#!/usr/bin/env bash
# A/B test the lock strategies on real programs with `spinmutex ab`, and write
# docs/REAL-WORLD.md: per program, each strategy's wall and CPU time (median, mean and
# their noise as stddev in % of the mean), and the ratio of its mean to glibc's with a
# 95% confidence interval and Welch's test. Not part of CI: timings need a quiet machine.
#
# usage: scripts/ab-real.sh [-n RUNS] [--warmup N] [--mb MIB] [--out FILE] [--no-build]
#   -n RUNS      measured runs per strategy (default 5)
#   --warmup N   unmeasured rounds first (default 1)
#   --mb MIB     size of the compressors' generated input (default 16; xz gets half)
#   --out FILE   the report (default docs/REAL-WORLD.md)
#   --no-build   use target/release as it is (default: cargo build --release first)
# Needs: sysbench, pigz, zstd, xz, python3 (to generate the input and the report).
set -euo pipefail

cd "$(dirname "$0")/.."

runs=5
warmup=1
mb=16
out=docs/REAL-WORLD.md
build=1
while [ $# -gt 0 ]; do
    case $1 in
        -n|--runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "ab-real.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

for tool in sysbench pigz zstd xz python3; do
    command -v "$tool" >/dev/null || { echo "ab-real.sh: $tool is not installed" >&2; exit 1; }
done

if [ "$build" = 1 ]; then
    cargo build --release
fi
spinmutex=target/release/spinmutex
[ -x "$spinmutex" ] || { echo "ab-real.sh: $spinmutex is missing (cargo build --release)" >&2; exit 1; }
"$spinmutex" ab --help >/dev/null || { echo "ab-real.sh: '$spinmutex ab' does not work" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/spinmutex-ab-real.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Deterministic, semi-compressible text (the same kind as tests/real_programs/ uses).
gen_input() {
    python3 - "$1" "$2" <<'PY'
import sys
path, size = sys.argv[1], int(sys.argv[2])
words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
         "rho sigma tau upsilon phi chi psi omega mutex futex spin lock wait wake owner queue").split()
state = 0x853c49e6748fea9b
mask = (1 << 64) - 1
def nxt():
    global state
    state ^= state >> 12
    state ^= (state << 25) & mask
    state ^= state >> 27
    return (state * 0x2545f4914f6cdd1d) & mask
n = written = 0
with open(path, "w") as f:
    while written < size:
        r = nxt()
        line = "%010d %s %08x\n" % (n, " ".join(words[(r >> (5 * k)) & 31] for k in range(8)), nxt() >> 32)
        f.write(line)
        written += len(line)
        n += 1
PY
}
gen_input "$work/input.txt" $((mb << 20))
gen_input "$work/input-xz.txt" $((mb << 19))

strategies=(-s glibc -s futex -s spin -s kernel -s auto -s none)

# name | description | command (run by `sh -c`, so its output can go to /dev/null)
cases=(
    "pigz|pigz -p 4 -6, ${mb} MiB|exec pigz -p 4 -6 -n -c '$work/input.txt' >/dev/null"
    "zstd|zstd -T4 -3, 1 MiB jobs, ${mb} MiB|exec zstd -q -T4 -3 -B1048576 -c '$work/input.txt' >/dev/null"
    "xz|xz -T4 -0, $((mb / 2)) MiB|exec xz -q -T4 -0 -c '$work/input-xz.txt' >/dev/null"
    "sysbench-mutex|sysbench mutex, 4 threads, 4 mutexes, 1e6 locks each|exec sysbench mutex --threads=4 --mutex-num=4 --mutex-locks=1000000 --mutex-loops=50 run >/dev/null"
    "sysbench-threads|sysbench threads, 4 threads, 2 locks, 10 yields, 20000 events|exec sysbench threads --threads=4 --thread-locks=2 --thread-yields=10 --events=20000 --time=0 run >/dev/null"
)

load=$(cut -d' ' -f1-3 /proc/loadavg)
jsons=()
for c in "${cases[@]}"; do
    IFS='|' read -r name desc command <<<"$c"
    echo "== $name: $desc" >&2
    # A failed run is reported in the JSON and in the report; keep going.
    "$spinmutex" ab "${strategies[@]}" -n "$runs" --warmup "$warmup" --json "$work/$name.json" -- sh -c "$command" >&2 ||
        echo "ab-real.sh: some runs of $name failed (see the report)" >&2
    [ -f "$work/$name.json" ] || { echo "ab-real.sh: spinmutex ab wrote no $work/$name.json" >&2; exit 1; }
    jsons+=("$name|$desc|$work/$name.json")
done

mkdir -p "$(dirname "$out")"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD 2>/dev/null; then commit="$commit (with uncommitted changes)"; fi
python3 - "$out" "$runs" "$warmup" "$commit" "$work" "$load" "${jsons[@]}" <<'PY'
import json, os, platform, subprocess, sys, time

out, runs, warmup, commit, work, load = sys.argv[1:7]
cases = [a.split("|", 2) for a in sys.argv[7:]]

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"

def version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).strip().splitlines()[0].strip("* ")
    except Exception:
        return "?"

def ms(x):
    return "-" if x is None else "%.0f ms" % (x * 1000) if x >= 0.1 else "%.1f ms" % (x * 1000)

def pct(x):
    return "-" if x is None else "%.1f%%" % x

def ratio(d, key, strategy):
    c = [c for c in d["comparisons"][key] if c["strategy"] == strategy and c["baseline"] == "glibc"]
    if not c or c[0]["ratio"] is None:
        return "(baseline)" if strategy == "glibc" else "-"
    c = c[0]
    ci = "[%.3f, %.3f]" % tuple(c["ratio_ci95"]) if c["ratio_ci95"] else "[unbounded]"
    sig = "significant" if c["significant"] else "not significant"
    return "%.3f %s, p = %.3f, %s" % (c["ratio"], ci, c["p_value"], sig)

lines = []
w = lines.append
w("# Real programs under spinmutex: A/B timings")
w("")
w("Generated by `scripts/ab-real.sh` on %s (commit %s) with `spinmutex ab`: every strategy"
  % (time.strftime("%Y-%m-%d"), commit))
w("runs the same command, interleaved (glibc, futex, spin, kernel, auto, none, glibc, ...), %s measured runs each"
  % runs)
w("after %s warm-up round(s). `none` is the program without the library; `glibc` is the library's"
  % warmup)
w("glibc-equivalent strategy, the baseline of the ratios. A ratio below 1 is faster (wall) or cheaper")
w("(CPU) than glibc; its 95% confidence interval and Welch's p-value say whether the difference")
w("stands out of the noise (stddev in % of the mean). With this few runs on a shared VM, treat")
w("anything not marked significant as noise, and even significant ratios as indicative only.")
w("")
w("Machine: %d CPUs (%s), Linux %s; %s; %s; %s; %s. Load average when the runs started: %s."
  % (os.cpu_count(), cpu_model(), platform.release(), version(["sysbench", "--version"]),
     version(["pigz", "--version"]), version(["xz", "--version"]), version(["zstd", "--version"]), load))
w("")
for name, desc, path in cases:
    d = json.load(open(path))
    summary = d["summary"]
    failed = [r for r in d["runs"] if not r["ok"]]
    w("## %s: %s" % (name, desc))
    w("")
    w("| strategy | ok | wall median | wall mean | wall noise | wall ratio to glibc | CPU median | CPU noise | CPU ratio to glibc |")
    w("|---|---|---|---|---|---|---|---|---|")
    for wall, cpu in zip(summary["wall_s"], summary["cpu_s"]):
        w("| %s | %d/%s | %s | %s | %s | %s | %s | %s | %s |" % (
            wall["strategy"], wall["n"], runs, ms(wall["median"]), ms(wall["mean"]), pct(wall["stddev_pct"]),
            ratio(d, "wall_s", wall["strategy"]), ms(cpu["median"]), pct(cpu["stddev_pct"]),
            ratio(d, "cpu_s", cpu["strategy"])))
    w("")
    if failed:
        w("Failed runs (left out): " + "; ".join("%s run %s: %s" % (r["strategy"], r["run"], r["error"]) for r in failed))
        w("")
    command = " ".join(d["command"][2:] if d["command"][:2] == ["sh", "-c"] else d["command"])
    w("Command: `%s`" % command.replace(work, "$TMPDIR"))
    w("")
with open(out, "w") as f:
    f.write("\n".join(lines))
print("wrote " + out, file=sys.stderr)
PY
