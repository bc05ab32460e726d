#!/usr/bin/env bash
# A/B throughput of two lawnd binaries in one window: StartTimer (unary, 64 in flight) and StartTimers
# (batches of 100, 16 in flight), memory and sync durability, REPS rounds with A and B alternating run by run
# (ABBA order), so each ratio pairs runs taken seconds apart. Prints medians, B/A ratios and CPU us per timer.
#
#   LAWND_A=old/build-bench/server/lawnd LAWND_B=build-bench/server/lawnd bench/scripts/ab.sh
#
# Environment (defaults): LAWND_A, LAWND_B (required), REPS (3), DURATION (4s), DURABILITIES ("memory sync"),
# MODES ("unary batch"), plus those of load_common.sh (LAWN_BUILD for lawn_load).
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

: "${LAWND_A:?set LAWND_A}" "${LAWND_B:?set LAWND_B}"
REPS=${REPS:-3}
DURATION=${DURATION:-4s}
DURABILITIES=${DURABILITIES:-memory sync}
MODES=${MODES:-unary batch}
out_init ab

for rep in $(seq 1 "$REPS"); do
  for durability in $DURABILITIES; do
    for mode in $MODES; do
      conc=$([[ $mode == unary ]] && echo 64 || echo 16)
      count=$([[ $mode == unary ]] && echo 2000000 || echo 8000000)
      # A then B in odd rounds, B then A in even ones: the run that follows another inherits its dirty pages
      # and the deletion of its data dir, which costs the durable modes a few percent.
      sides="A B"
      ((rep % 2 == 0)) && sides="B A"
      for side in $sides; do
        bin_var="LAWND_$side"
        LAWND=${!bin_var}
        lawn_start --durability "$durability" --shards 2
        load_run "{\"side\":\"$side\",\"durability\":\"$durability\",\"rep\":$rep}" \
          --mode "$mode" --concurrency "$conc" --batch 100 --count "$count" --duration "$DURATION" --ttl 1h \
          >/dev/null
        lawn_stop
      done
    done
  done
done

# Medians per (durability, mode, side), and B/A.
/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def key(r): return (r["durability"], r.get("mode", "?"))
groups = {}
for r in rows:
    groups.setdefault(key(r), {}).setdefault(r["side"], []).append(r)
print("| durability | shape | A timers/s | B timers/s | B/A | A server CPU us/timer | B server CPU us/timer | load 1m |")
print("|---|---|---|---|---|---|---|---|")
for (dur, mode), sides in sorted(groups.items()):
    def med(side, field):
        vals = [r[field] for r in sides.get(side, []) if field in r]
        return statistics.median(vals) if vals else float("nan")
    a, b = med("A", "timers_per_s"), med("B", "timers_per_s")
    print(f"| {dur} | {mode} | {a:,.0f} | {b:,.0f} | {b / a:.2f} | {med('A', 'server_cpu_us_per_timer'):.2f} | "
          f"{med('B', 'server_cpu_us_per_timer'):.2f} | {statistics.median(r['loadavg_1m'] for s in sides.values() for r in s):.1f} |")
PY
