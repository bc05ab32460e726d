#!/usr/bin/env bash
# Throughput of StartTimer (unary) and StartTimers (batch of 100) against lawnd over loopback gRPC, per
# durability mode and calls in flight; a fresh lawnd (--shards 2, fresh data dir) for every run. Repetitions
# are the outer loop and the durability modes of a cell run back to back, so each ratio to the memory
# baseline pairs runs taken seconds apart. Bounded: about REPS x cells x (DURATION + 1.5 s).
#
#   bench/scripts/throughput.sh                       # NETWORK_RESULTS.md section a (unary+batch, memory+sync)
#   MODES=batch DURABILITIES="memory interval sync" CHANNELS=per-call bench/scripts/throughput.sh   # section c
#
# Environment (defaults): MODES ("unary batch"), DURABILITIES ("memory sync"; the first is the baseline),
# CONCS ("1 16 64"), REPS (3), DURATION (4s), SHARDS (2), BATCH (100), CHANNELS ("one": every call on one
# connection; "per-call": one connection per call in flight, i.e. N clients), plus those of load_common.sh.
# Writes $OUT/raw.jsonl (one lawn_load JSON line per run) and $OUT/summary.md (medians).
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

MODES=${MODES:-unary batch}
DURABILITIES=${DURABILITIES:-memory sync}
CONCS=${CONCS:-1 16 64}
REPS=${REPS:-3}
DURATION=${DURATION:-4s}
SHARDS=${SHARDS:-2}
BATCH=${BATCH:-100}
CHANNELS=${CHANNELS:-one}
out_init throughput

for rep in $(seq 1 "$REPS"); do
  for mode in $MODES; do
    # Budgets above what the duration allows, below max_pending_timers (10M): the duration ends each run.
    count=$([[ $mode == unary ]] && echo 2000000 || echo 8000000)
    for conc in $CONCS; do
      channels=$([[ $CHANNELS == per-call ]] && echo "$conc" || echo 1)
      for durability in $DURABILITIES; do
        lawn_start --durability "$durability" --shards "$SHARDS"
        load_run "{\"durability\":\"$durability\",\"rep\":$rep}" \
          --mode "$mode" --concurrency "$conc" --channels "$channels" --batch "$BATCH" \
          --count "$count" --duration "$DURATION" --ttl 1h
        lawn_stop
      done
    done
  done
done

python3 - "$OUT/raw.jsonl" "${DURABILITIES%% *}" >"$OUT/summary.md" <<'EOF'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
base = sys.argv[2]
cells = defaultdict(list)
for r in rows:
    cells[(r["mode"], r["concurrency"], r["durability"])].append(r)
def med(rs, k):
    v = [r[k] for r in rs if k in r]
    return statistics.median(v) if v else float("nan")
print(f"| mode | in flight | channels | durability | timers/s | calls/s | p50 ms | p99 ms | max ms "
      f"| lawnd CPU us/timer | client CPU us/timer | vs {base} (timers/s) | errors | runs |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (mode, conc, dur), rs in sorted(cells.items(), key=lambda kv: (kv[0][0] != "unary", kv[0][1])):
    ratios = []
    for r in rs:
        b = [x for x in cells.get((mode, conc, base), []) if x["rep"] == r["rep"]]
        if b and b[0]["timers_per_s"] > 0:
            ratios.append(r["timers_per_s"] / b[0]["timers_per_s"])
    ratio = f"{statistics.median(ratios):.2f}" if ratios else "-"
    errors = sum(r["call_errors"] + r["timer_errors"] for r in rs)
    print(f"| {mode} | {conc} | {rs[0]['channels']} | {dur} | {med(rs, 'timers_per_s'):,.0f} | {med(rs, 'calls_per_s'):,.0f} "
          f"| {med(rs, 'latency_us_p50') / 1e3:.2f} | {med(rs, 'latency_us_p99') / 1e3:.2f} "
          f"| {med(rs, 'latency_us_max') / 1e3:.1f} | {med(rs, 'server_cpu_us_per_timer'):.2f} "
          f"| {med(rs, 'client_cpu_us_per_timer'):.2f} | {ratio} | {errors} | {len(rs)} |")
EOF
cat "$OUT/env.txt" "$OUT/summary.md"
