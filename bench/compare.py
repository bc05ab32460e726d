#!/usr/bin/python3
"""Summarizes lawn_bench JSON output as markdown tables (standard library only).

Usage:
  lawn_bench --benchmark_format=json > out.json    (or: lawn_bench --benchmark_out=out.json)
  python3 bench/compare.py out.json                (or: ... | python3 bench/compare.py -)

For each Op (Start, Delete, Expire), Workload and pending count it prints the ns per timer of the Engine,
the Heap and the Multimap baselines, and the Engine's speedup over the better (lower) baseline:
speedup = best baseline ns / Engine ns, so > 1 means the Engine is faster. A second table does the same for
bytes per pending timer (BM_Memory_*: malloc bytes in use after building the population).

With --benchmark_repetitions the median aggregate is used; if only the individual repetitions are present,
their median is taken here.
"""

import json
import re
import statistics
import sys

OPS = ("Start", "Delete", "Expire")
STRUCTURES = ("Engine", "Heap", "Multimap")
BASELINES = ("Heap", "Multimap")
NAME = re.compile(r"^BM_(?P<op>[A-Za-z]+)_(?P<structure>[A-Za-z]+)_(?P<workload>[A-Za-z]+)/(?P<pending>\d+)$")


def load(path):
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def metric(entry, key):
    """The figure of one benchmark entry: a counter, or ns/timer derived from items_per_second."""
    if key in entry:
        return float(entry[key])
    if key == "ns_per_timer" and entry.get("items_per_second"):
        return 1e9 / float(entry["items_per_second"])
    return None


def collect(report, key):
    """{(op, structure, workload, pending): value}, preferring median aggregates over single runs."""
    medians = {}
    runs = {}
    errors = set()
    for entry in report.get("benchmarks", []):
        name = entry.get("run_name", entry.get("name", ""))
        m = NAME.match(name)
        if not m:
            continue
        k = (m["op"], m["structure"], m["workload"], int(m["pending"]))
        if entry.get("error_occurred"):
            errors.add(k)
            continue
        value = metric(entry, key)
        if value is None:
            continue
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[k] = value
        else:
            runs.setdefault(k, []).append(value)
    values = {k: statistics.median(v) for k, v in runs.items()}
    values.update(medians)
    for k in errors:
        values.setdefault(k, "error")
    return values


def fmt(value, digits):
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:,.{digits}f}"


def speedup(values, op, workload, pending):
    engine = values.get((op, "Engine", workload, pending))
    baselines = [values.get((op, b, workload, pending)) for b in BASELINES]
    baselines = [b for b in baselines if isinstance(b, float)]
    if not isinstance(engine, float) or engine <= 0 or not baselines:
        return "-"
    best = min(baselines)
    return f"{best / engine:.2f}x"


def keys_of(values, ops):
    workloads = sorted({k[2] for k in values if k[0] in ops})
    pendings = sorted({k[3] for k in values if k[0] in ops})
    return workloads, pendings


def time_table(values):
    lines = [
        "| Op | Workload | Pending | Engine ns/timer | Heap ns/timer | Multimap ns/timer | Engine speedup vs best baseline |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    workloads, pendings = keys_of(values, OPS)
    for op in OPS:
        for workload in workloads:
            for pending in pendings:
                row = [values.get((op, s, workload, pending)) for s in STRUCTURES]
                if all(v is None for v in row):
                    continue
                cells = [fmt(v, 1) for v in row]
                lines.append(f"| {op} | {workload} | {pending:,} | " + " | ".join(cells) +
                             f" | {speedup(values, op, workload, pending)} |")
    return lines


def memory_table(values, engine_reported):
    lines = [
        "| Workload | Pending | Engine B/timer | Engine B/timer (MemoryBytes) | Heap B/timer | Multimap B/timer | Best baseline / Engine |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    workloads, pendings = keys_of(values, ("Memory",))
    for workload in workloads:
        for pending in pendings:
            row = [values.get(("Memory", s, workload, pending)) for s in STRUCTURES]
            if all(v is None for v in row):
                continue
            reported = engine_reported.get(("Memory", "Engine", workload, pending))
            cells = [fmt(row[0], 1), fmt(reported, 1), fmt(row[1], 1), fmt(row[2], 1)]
            lines.append(f"| {workload} | {pending:,} | " + " | ".join(cells) +
                         f" | {speedup(values, 'Memory', workload, pending)} |")
    return lines


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    report = load(argv[1])
    times = collect(report, "ns_per_timer")
    memory = collect(report, "bytes_per_timer")
    engine_reported = collect(report, "engine_bytes_per_timer")
    out = []
    if any(k[0] in OPS for k in times):
        out.append("### ns per timer (CPU time; lower is better)")
        out.append("")
        out.extend(time_table(times))
    if any(k[0] == "Memory" for k in memory):
        if out:
            out.append("")
        out.append("### Bytes per pending timer (malloc bytes in use; lower is better)")
        out.append("")
        out.extend(memory_table(memory, engine_reported))
    if not out:
        print("no lawn_bench results found", file=sys.stderr)
        return 1
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
