#!/usr/bin/python3
"""Summarizes the raw JSON lines of bench/scripts/compare.sh as markdown tables (standard library only).

Usage:
  bench/scripts/compare_summary.py RAW.jsonl [ENV.txt]

compare.sh runs it at its end ($OUT/raw.jsonl, $OUT/env.txt); run it by hand to re-read a kept run (e.g.
bench/results/compare-*.jsonl) or several runs concatenated. Per shape (unary, batch) and system: the median
rate (ops/s; an op is a timer for floor and lawnd, a ZADD for redis, a put for beanstalkd), the spread of the
rates, the ratio to the floor's median, and the medians of the server's and the loader's CPU microseconds per
op and of the 1-minute load average. Then ratios of median rates for the pairs worth comparing, with the
difference of the server CPU per op. A row's fields come from lawn_load (timers_per_s,
server_cpu_us_per_timer, ...) or from compare.sh's peer runs (ops_per_s, server_cpu_us_per_op, ...).
"""

import json
import statistics
import sys

PROMISE = {
    "floor": "no work (gRPC floor)",
    "lawnd-memory": "nothing on disk",
    "lawnd-interval": "written; fsync every 50 ms",
    "lawnd-sync": "fsync before the answer",
    "redis-no": "AOF written; kernel flushes",
    "redis-always": "AOF fsync before the answers",
    "beanstalkd-f50": "binlog written; fsync every 50 ms",
    "beanstalkd-f0": "binlog fsync per put",
}

PAIRS = [
    ("lawnd-memory", "floor"),
    ("lawnd-interval", "lawnd-memory"),
    ("lawnd-sync", "lawnd-memory"),
    ("lawnd-sync", "lawnd-interval"),
    ("redis-always", "redis-no"),
    ("beanstalkd-f0", "beanstalkd-f50"),
    ("lawnd-interval", "redis-no"),
    ("lawnd-sync", "redis-always"),
    ("lawnd-interval", "beanstalkd-f50"),
    ("lawnd-sync", "beanstalkd-f0"),
]

RATE = ("ops_per_s", "timers_per_s")
SERVER_CPU = ("server_cpu_us_per_op", "server_cpu_us_per_timer")
CLIENT_CPU = ("client_cpu_us_per_op", "client_cpu_us_per_timer")


def field(row, names):
    for name in names:
        if name in row:
            return row[name]
    return None


def fmt(value, spec):
    return "n/a" if value is None else format(value, spec)


def fmt_ratio(value):
    return fmt(value, ".2g" if value is not None and value < 0.1 else ".2f")


def human(rate):
    """A rate in 3 significant digits: 1.58M, 217k, 4.2k, 296."""
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M"
    if rate >= 1e5:
        return f"{rate / 1e3:.0f}k"
    if rate >= 1e3:
        return f"{rate / 1e3:.1f}k"
    return f"{rate:.0f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]

    def runs(system, shape):
        return [r for r in rows if r.get("system") == system and r.get("shape") == shape]

    def med(system, shape, names):
        values = [field(r, names) for r in runs(system, shape)]
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    shapes = [s for s in ("unary", "batch") if any(r.get("shape") == s for r in rows)]
    systems = [s for s in PROMISE if any(r.get("system") == s for r in rows)]
    if len(sys.argv) == 3:
        print(open(sys.argv[2]).read().rstrip())
        print()
    print("Medians of the runs (min-max: the spread of the rates); ops = timers (floor, lawnd), ZADDs (redis), puts")
    print("(beanstalkd); CPU = microseconds per op of the server process and of the loader.")
    for shape in shapes:
        what = ("unary: 1 op per request, 64 in flight" if shape == "unary"
                else "batch: 100 ops per request (redis, beanstalkd: pipeline of 100), 16 in flight")
        print()
        print(f"**{what}**")
        print()
        print("| system | promise | ops/s | min-max | vs floor | server CPU us/op | loader CPU us/op | errors | load 1m "
              "| runs |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        floor = med("floor", shape, RATE)
        for system in systems:
            these = runs(system, shape)
            if not these:
                continue
            rate = med(system, shape, RATE)
            rates = [field(r, RATE) or 0 for r in these]
            errors = sum((r.get("errors") or 0) + (r.get("call_errors") or 0) + (r.get("timer_errors") or 0)
                         for r in these)
            print(f"| {system} | {PROMISE[system]} | {fmt(rate, ',.0f')} | {human(min(rates))}-{human(max(rates))} | "
                  f"{fmt_ratio(ratio(rate, floor))} | {fmt(med(system, shape, SERVER_CPU), '.2f')} | "
                  f"{fmt(med(system, shape, CLIENT_CPU), '.2f')} | {errors} | "
                  f"{fmt(med(system, shape, ('loadavg_1m',)), '.1f')} | {len(these)} |")

    pairs = [(a, b) for a, b in PAIRS if a in systems and b in systems]
    if not pairs:
        return
    print()
    print("**Ratios of the median rates** (and server CPU per op, A minus B)")
    print()
    print("| A / B | " + " | ".join(f"{s} rate ratio | {s} CPU us/op A-B" for s in shapes) + " |")
    print("|---|" + "---|---|" * len(shapes))
    for a, b in pairs:
        cells = []
        for shape in shapes:
            ca, cb = med(a, shape, SERVER_CPU), med(b, shape, SERVER_CPU)
            cells += [fmt_ratio(ratio(med(a, shape, RATE), med(b, shape, RATE))),
                      fmt(None if ca is None or cb is None else ca - cb, "+.2f")]
        print(f"| {a} / {b} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
