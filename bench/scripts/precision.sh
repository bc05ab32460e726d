#!/usr/bin/env bash
# Expiry precision: lawnd (--shards 2, fresh data dir each run) holding PENDING long-TTL timers, RATE short
# timers per second (TTL uniform 100 ms..2 s) started for DURATION, one subscriber (max_in_flight 1000, acking
# everything) measuring receive time minus deadline. Durability modes alternate within each repetition.
# Bounded: about REPS x modes x (preload + DURATION + 2 s + restart), i.e. ~3.5 min with the defaults.
#
#   bench/scripts/precision.sh
#
# Environment (defaults): DURABILITIES ("memory sync"), REPS (3), PENDING (1000000), RATE (10000),
# DURATION (20s), SHARDS (2), plus those of load_common.sh. Writes $OUT/raw.jsonl and $OUT/summary.md.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

DURABILITIES=${DURABILITIES:-memory sync}
REPS=${REPS:-3}
PENDING=${PENDING:-1000000}
RATE=${RATE:-10000}
DURATION=${DURATION:-20s}
SHARDS=${SHARDS:-2}
out_init precision

for rep in $(seq 1 "$REPS"); do
  for durability in $DURABILITIES; do
    lawn_start --durability "$durability" --shards "$SHARDS"
    load_run "{\"durability\":\"$durability\",\"rep\":$rep}" \
      --mode precision --pending "$PENDING" --rate "$RATE" --duration "$DURATION" \
      --ttl 1h --ttl-min 100ms --ttl-max 2s --batch 100 --max-in-flight 1000
    lawn_stop
  done
done

python3 - "$OUT/raw.jsonl" >"$OUT/summary.md" <<'EOF'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cells = defaultdict(list)
for r in rows:
    cells[r["durability"]].append(r)
def med(rs, k):
    return statistics.median([r[k] for r in rs])
print("| durability | pending | started/s | received | missing | early | lateness p50 ms | p99 ms | p99.9 ms "
      "| max ms | lawnd fire lateness p50 / p99 ms | runs (p99 each, ms) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for dur, rs in cells.items():
    each = ", ".join(f"{r['lateness_us_p99'] / 1e3:.2f}" for r in rs)
    print(f"| {dur} | {med(rs, 'preloaded'):,.0f} | {med(rs, 'start_timers_per_s'):,.0f} | {med(rs, 'received'):,.0f} "
          f"| {sum(r['missing'] for r in rs)} | {sum(r['early'] + r['fired_early'] for r in rs)} "
          f"| {med(rs, 'lateness_us_p50') / 1e3:.2f} | {med(rs, 'lateness_us_p99') / 1e3:.2f} "
          f"| {med(rs, 'lateness_us_p999') / 1e3:.2f} | {med(rs, 'lateness_us_max') / 1e3:.1f} "
          f"| {med(rs, 'fire_lateness_us_p50') / 1e3:.2f} / {med(rs, 'fire_lateness_us_p99') / 1e3:.2f} | {each} |")
EOF
cat "$OUT/env.txt" "$OUT/summary.md"
