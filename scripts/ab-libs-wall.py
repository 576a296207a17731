#!/usr/bin/env python3
"""A/B of library builds on any command, by its wall time: each arm runs CMD under its
own libspinmutex.so, interleaved run by run, and the script prints each arm's median,
mean, 10th and 90th percentile wall time, how many runs took over 1.3x the first arm's
median, and the median CPU time (user + system, of CMD and its children).

    scripts/ab-libs-wall.py RUNS ARMS -- CMD [ARGS...]

ARMS is a space-separated list of NAME=LIB[:STRATEGY] (STRATEGY defaults to auto), e.g.
"futex=/tmp/base.so:futex base=/tmp/base.so kept=target/release/libspinmutex.so".
CMD's output is discarded. With AB_LIBS_CSV=FILE, every run is appended to FILE as
`command,arm,run,wall_ms,cpu_ms`.

Compare builds by their ratios, not their times: two builds of the same code, or a
change that leaves the waiting code alone, can differ by 3-7% in every strategy (code
layout; two copies of one file agree within 0.5%). Give each build a `futex` arm too:
every other arm of that build is then also printed as a ratio to it (the medians' and
the means'). AB_LIBS_CONTROL=STRATEGY picks another control strategy.

`spinmutex ab` compares strategies of one build on a command; scripts/ab-libs.sh
compares builds on the contention workload; this compares builds on a command (the
`sysbench mutex` variants in docs/BENCHMARKS.md).
"""
import os
import statistics
import subprocess
import sys
import time


def usage(message):
    sys.exit(f"ab-libs-wall: {message}\n\n{__doc__.strip()}")


def arms_of(text):
    arms = []
    for arm in text.split():
        name, _, spec = arm.partition("=")
        lib, _, strategy = spec.partition(":")
        if not name or not lib:
            usage(f"an arm is NAME=LIB[:STRATEGY], not '{arm}'")
        if not os.path.isfile(lib):
            usage(f"arm {name}: no library at {lib}")
        arms.append((name, os.path.abspath(lib), strategy or "auto"))
    return arms


def run_once(cmd, lib, strategy):
    env = dict(os.environ, LD_PRELOAD=lib, SPINMUTEX_STRATEGY=strategy)
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage_ = os.wait4(child.pid, 0)
    wall_ms = (time.perf_counter() - start) * 1000
    if status != 0:
        sys.exit(f"ab-libs-wall: {' '.join(cmd)} failed under {lib} ({strategy}): wait status {status}")
    return wall_ms, (usage_.ru_utime + usage_.ru_stime) * 1000


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--" or not args[0].isdigit() or int(args[0]) == 0:
        usage("expected RUNS ARMS -- CMD")
    runs, arms, cmd = int(args[0]), arms_of(args[1]), args[3:]
    # Opened once: a FIFO then sees one writer for the whole batch.
    csv = open(os.environ["AB_LIBS_CSV"], "a", buffering=1) if os.environ.get("AB_LIBS_CSV") else None
    results = {name: [] for name, _, _ in arms}
    for run in range(1, runs + 1):
        for name, lib, strategy in arms:
            wall_ms, cpu_ms = run_once(cmd, lib, strategy)
            results[name].append((wall_ms, cpu_ms))
            if csv:
                csv.write(f"\"{' '.join(cmd)}\",{name},{run},{wall_ms:.2f},{cpu_ms:.2f}\n")
    print(f"== {' '.join(cmd)} ({runs} runs per arm, interleaved; wall ms)")
    walls_of = {name: sorted(w for w, _ in results[name]) for name in results}
    control_strategy = os.environ.get("AB_LIBS_CONTROL", "futex")
    control_of = {lib: name for name, lib, strategy in arms if strategy == control_strategy}
    reference = None
    for name, lib, strategy in arms:
        walls = walls_of[name]
        cpus = [c for _, c in results[name]]
        median = statistics.median(walls)
        reference = reference or median
        at = lambda q: walls[int(q * (len(walls) - 1))]
        slow = sum(w > 1.3 * reference for w in walls)
        line = (f"{name}: median {median:.1f}, mean {statistics.mean(walls):.1f}, p10 {at(0.1):.1f}, "
                f"p90 {at(0.9):.1f}, over 1.3x the first arm's median: {slow}, CPU median "
                f"{statistics.median(cpus):.1f}")
        control = control_of.get(lib)
        if control and strategy != control_strategy:
            base = walls_of[control]
            line += (f"; over {control} (its build's {control_strategy}): median "
                     f"{median / statistics.median(base):.3f}, mean "
                     f"{statistics.mean(walls) / statistics.mean(base):.3f}")
        print(line)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
