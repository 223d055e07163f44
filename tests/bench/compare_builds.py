#!/usr/bin/env python3
"""Runs the same Google Benchmark program from two or more builds in turn,
round after round, and prints for each benchmark the median throughput (or
time) of each build and the median of its per-round ratio to the first build.

On a shared machine a build measured minutes after another sees a different
machine; running them in turn, many times, and comparing within each round
keeps that out of the ratios.

  tests/bench/compare_builds.py --rounds 9 --filter 'hostile_dense' \\
      build/before/tests/bench/render/render_bench build/after/tests/bench/render/render_bench
"""

import argparse
import json
import statistics
import subprocess
import sys


def run(program, benchmark_filter, min_time):
    out = subprocess.run(
        [program, f"--benchmark_filter={benchmark_filter}", f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        capture_output=True, text=True, check=True).stdout
    figures = {}
    for b in json.loads(out)["benchmarks"]:
        if "bytes_per_second" in b:
            figures[b["name"]] = (b["bytes_per_second"] / 1e6, "MB/s", True)
        else:
            figures[b["name"]] = (b["real_time"], b["time_unit"], False)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--filter", default=".")
    parser.add_argument("--min-time", default="0.15")
    parser.add_argument("programs", nargs="+")
    args = parser.parse_args()
    if len(args.programs) < 2:
        sys.exit("compare_builds: give at least two programs")
    results = {}  # name -> program -> [values]
    units = {}
    for _ in range(args.rounds):
        for program in args.programs:
            for name, (value, unit, higher_is_better) in run(program, args.filter, args.min_time).items():
                results.setdefault(name, {}).setdefault(program, []).append(value)
                units[name] = (unit, higher_is_better)
    for name, per_program in results.items():
        unit, higher_is_better = units[name]
        first = per_program.get(args.programs[0], [])
        line = f"{name}"
        for program in args.programs:
            values = per_program.get(program, [])
            if not values:
                line += f"\n  {program}: not run"
                continue
            line += f"\n  {program}: median {statistics.median(values):.1f} {unit} (best {max(values) if higher_is_better else min(values):.1f})"
            if program != args.programs[0] and len(values) == len(first):
                ratio = statistics.median([v / f for v, f in zip(values, first)])
                line += f", x{ratio:.3f} of the first {'(higher is faster)' if higher_is_better else '(lower is faster)'}"
        print(line)


if __name__ == "__main__":
    main()
