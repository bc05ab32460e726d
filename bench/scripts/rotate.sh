#!/usr/bin/env bash
# Throughput of several (lawnd binary, durability) configurations in one window, each round running them all
# in a rotated order, reversed every other round (so no configuration always follows the same other one),
# and medians per configuration:
# timers/s, lawnd CPU us per timer, lawnd thread switches per call.
#
#   LAWN_BUILD=$PWD/build bench/scripts/rotate.sh old/lawnd:interval build/server/lawnd:interval \
#     build/server/lawnd:memory
#
# Arguments: BINARY:DURABILITY, at least one; DURABILITY is sync, interval or memory, and sync-log or
# interval-log run it with --storage-engine log (storage format 3). Environment (defaults): REPS (5), DURATION (4s), MODE (unary),
# CONC (64), plus those of load_common.sh (LAWN_BUILD for lawn_load). lawnd runs with --shards 2.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

(($# > 0)) || { echo "usage: $0 BINARY:DURABILITY..." >&2; exit 2; }
REPS=${REPS:-5}
DURATION=${DURATION:-4s}
MODE=${MODE:-unary}
CONC=${CONC:-64}
CONFIGS=("$@")
out_init rotate

n=${#CONFIGS[@]}
for rep in $(seq 1 "$REPS"); do
  for k in $(seq 0 $((n - 1))); do
    # Rotated, and reversed in even rounds: each configuration follows a different one from round to round
    # (the run after another inherits its dirty pages and the deletion of its data dir).
    i=$(((k + rep) % n))
    ((rep % 2 == 0)) && i=$(((n - 1 - k + rep) % n))
    cfg=${CONFIGS[$i]}
    # shellcheck disable=SC2034  # Read by lawn_start (load_common.sh).
    LAWND=${cfg%:*}
    durability=${cfg##*:}
    engine=rocksdb
    [[ $durability == *-log ]] && engine=log && durability=${durability%-log}
    lawn_start --durability "$durability" --storage-engine "$engine" --shards 2
    load_run "{\"cfg\":\"$cfg\",\"rep\":$rep}" --mode "$MODE" --concurrency "$CONC" --batch 100 \
      --count 80000000 --duration "$DURATION" --ttl 1h >/dev/null
    lawn_stop
  done
done

/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cfgs = list(dict.fromkeys(r["cfg"] for r in rows))
print("| configuration | runs | timers/s | lawnd CPU us/timer | switches/call | load 1m |")
print("|---|---|---|---|---|---|")
for c in cfgs:
    rs = [r for r in rows if r["cfg"] == c]
    med = lambda f: statistics.median(r[f] for r in rs)
    print(f"| {c} | {len(rs)} | {med('timers_per_s'):,.0f} | {med('server_cpu_us_per_timer'):.2f} | "
          f"{med('server_switches_per_call'):.2f} | {med('loadavg_1m'):.1f} |")
PY
