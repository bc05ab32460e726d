#!/usr/bin/env bash
# The C++ client's batching publisher (issue 11) against plain unary calls, in one window: THREADS callers
# each start timers one at a time (each call waits for its answer) for DURATION, through
#   unary        LawnClient::StartTimer, one RPC per timer;
#   batcher      TimerBatcher with its defaults (max_linger 0, max_batch 100, max_in_flight 4);
#   batcher-1ms  TimerBatcher with max_linger 1ms (a partial batch waits 1 ms for more timers);
# against a Release lawnd (--durability memory --shards 2, fresh per run), the setups alternating run by run
# for REPS rounds. Prints medians of timers/s, the ratio to unary, lawnd's and the client's CPU us per timer,
# timers per StartTimers call and the 1-minute load average.
#
#   cmake --build build-bench -j2 --target lawnd lawn_batcher_load
#   bench/scripts/batcher.sh
#
# Environment (defaults): REPS (3), DURATION (5s), THREADS ("16 64"), plus those of load_common.sh.
# shellcheck disable=SC2034  # Read by load_common.sh.
LAWN_LOAD_BIN=lawn_batcher_load
# shellcheck source=bench/scripts/load_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

REPS=${REPS:-3}
DURATION=${DURATION:-5s}
THREADS=${THREADS:-16 64}
out_init batcher

for rep in $(seq 1 "$REPS"); do
  for threads in $THREADS; do
    for setup in unary batcher batcher-1ms; do
      args=(--threads "$threads" --duration "$DURATION")
      case $setup in
        unary) args+=(--mode unary) ;;
        batcher) args+=(--mode batcher) ;;
        batcher-1ms) args+=(--mode batcher --linger 1ms) ;;
      esac
      lawn_start --durability memory --shards 2
      load_run "{\"setup\":\"$setup\",\"rep\":$rep}" "${args[@]}" >/dev/null
      lawn_stop
    done
  done
done

/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(threads, setup, field):
    vals = [r[field] for r in rows if r["threads"] == threads and r["setup"] == setup]
    return statistics.median(vals) if vals else float("nan")
print("| threads | setup | timers/s (median) | vs unary | lawnd CPU us/timer | client CPU us/timer | timers/call | load 1m |")
print("|---|---|---|---|---|---|---|---|")
for threads in sorted({r["threads"] for r in rows}):
    base = med(threads, "unary", "timers_per_s")
    for setup in ("unary", "batcher", "batcher-1ms"):
        rate = med(threads, setup, "timers_per_s")
        print(f"| {threads} | {setup} | {rate:,.0f} | {rate / base:.2f} | "
              f"{med(threads, setup, 'server_cpu_us_per_timer'):.2f} | "
              f"{med(threads, setup, 'client_cpu_us_per_timer'):.2f} | "
              f"{med(threads, setup, 'timers_per_call'):.1f} | {med(threads, setup, 'loadavg_1m'):.1f} |")
PY
