#!/usr/bin/env python3
"""Summarises a scripts/device-cells.sh output folder: per cell, each arm's median
throughput (÷ `none`), CPU and voluntary context switches per 1000 acquisitions; the
sleeps and handoffs per 1000 acquisitions of `futex`, `spin` and `auto` from their statistics;
and `auto`'s verdicts from its trace.

    scripts/device-cells-summary.py OUT
"""
import csv
import json
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path


def tagged_lines(path):
    """(cell, arm, record) for each JSON line, after the {"cell": ..} line naming it."""
    cell = arm = None
    if not path.exists():
        return
    for line in path.open():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if set(record) == {"cell", "arm"}:
            cell, arm = record["cell"], record["arm"]
        elif cell:
            yield cell, arm, record


def main(out):
    runs = defaultdict(list)
    with (out / "runs.csv").open() as f:
        for r in csv.DictReader(f):
            if r["counter_ok"] != "1":
                print(f"LOST UPDATE: {r['cell']} {r['arm']} run {r['run']}")
            runs[(r["cell"], r["arm"])].append(r)
    cells = list(dict.fromkeys(c for c, _ in runs))
    arms = list(dict.fromkeys(a for _, a in runs))

    def med(cell, arm, f):
        return st.median(f(r) for r in runs[(cell, arm)]) if runs[(cell, arm)] else float("nan")

    ops = lambda r: float(r["ops_per_s"])
    per_k = lambda key: lambda r: 1000 * float(r[key]) / max(float(r["ops"]), 1)
    cpu = lambda r: 1e9 * float(r["cpu_s"]) / max(float(r["ops"]), 1)

    print("Mops/s median (÷ none) | CPU ns per acquisition | voluntary switches per 1000 acquisitions")
    for cell in cells:
        none = med(cell, "none", ops)
        print(f"{cell}")
        for arm in arms:
            if not runs[(cell, arm)]:
                continue
            m = med(cell, arm, ops)
            ratio = f"({m / none:4.2f})" if none == none else "      "
            print(f"  {arm:9} {m / 1e6:7.2f} {ratio}  cpu {med(cell, arm, cpu):7.0f} ns"
                  f"  vol {med(cell, arm, per_k('vol_ctx')):6.1f}")

    print("\nstatistics: sleeps and handoffs per 1000 acquisitions; auto's mode")
    for cell, arm, report in tagged_lines(out / "stats.json"):
        for c in report.get("classes", [])[:1]:
            n = c["counters"]
            k = max(n["locked"], 1) / 1000
            policy = c.get("policy")
            mode = (f"  mode {policy['mode']}, served spinning {policy['served_spinning']}"
                    f" sleeping {policy['served_sleeping']}") if policy else ""
            print(f"  {cell:14} {arm:6} contended {n['contended'] / k:6.1f} sleeps {n['sleeps'] / k:6.1f}"
                  f" handoffs {n['handoffs'] / k:6.2f}{mode}")

    print("\nauto's verdicts (policy events): from -> to, because; spin vs sleep Mops/s")
    for cell, _, e in tagged_lines(out / "trace.jsonl"):
        if e.get("event") == "policy":
            sp, sl = e.get("spin_per_s"), e.get("sleep_per_s")
            pace = f"  spin {sp / 1e6:.2f} sleep {sl / 1e6:.2f}" if sp is not None and sl is not None else ""
            print(f"  {cell:14} {e['from']} -> {e['to']} ({e['because']}){pace}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
