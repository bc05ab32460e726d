#!/usr/bin/env bash
# Issue 11 in one window, A/B alternating run by run for REPS rounds, against a Release lawnd (2 shards,
# fresh per run):
#   start     StartTimers of 100, 16 in flight, memory durability: codes only (default) vs return_timers.
#   drain     Subscribe throughput: DRAIN_COUNT fired timers wait in the outbox, one subscriber
#             (max_in_flight 1000) empties it; max_batch 0 (one expiration per response) vs 1000; memory
#             and sync durability.
#   precision firing under load: PENDING long timers, RATE short timers/s for PRECISION_DURATION, one
#             subscriber; max_batch 0 vs 1000; memory durability.
# Prints medians per case, and lawnd's CPU microseconds per timer / expiration.
#
#   bench/scripts/batching.sh
#
# Environment (defaults): REPS (3), DURATION (4s), DRAIN_COUNT (200000), PENDING (100000), RATE (10000),
# PRECISION_DURATION (10s), plus those of load_common.sh (LAWN_BUILD).
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

REPS=${REPS:-3}
DURATION=${DURATION:-4s}
DRAIN_COUNT=${DRAIN_COUNT:-200000}
PENDING=${PENDING:-100000}
RATE=${RATE:-10000}
PRECISION_DURATION=${PRECISION_DURATION:-10s}
out_init batching

for rep in $(seq 1 "$REPS"); do
  for echo_timers in 0 1; do
    lawn_start --durability memory --shards 2
    flags=()
    ((echo_timers)) && flags+=(--return-timers)
    load_run "{\"case\":\"start\",\"variant\":\"$([[ $echo_timers == 1 ]] && echo return_timers || echo codes)\",\"rep\":$rep}" \
      --mode batch --concurrency 16 --batch 100 --count 8000000 --duration "$DURATION" --ttl 1h "${flags[@]}" >/dev/null
    lawn_stop
  done
  for durability in memory sync; do
    for max_batch in 0 1000; do
      lawn_start --durability "$durability" --shards 2
      load_run "{\"case\":\"drain\",\"durability\":\"$durability\",\"variant\":\"max_batch=$max_batch\",\"rep\":$rep}" \
        --mode drain --count "$DRAIN_COUNT" --batch 1000 --concurrency 4 --max-in-flight 1000 \
        --max-batch "$max_batch" >/dev/null
      lawn_stop
    done
  done
  for max_batch in 0 1000; do
    lawn_start --durability memory --shards 2
    load_run "{\"case\":\"precision\",\"variant\":\"max_batch=$max_batch\",\"rep\":$rep}" \
      --mode precision --pending "$PENDING" --rate "$RATE" --duration "$PRECISION_DURATION" \
      --max-in-flight 1000 --max-batch "$max_batch" >/dev/null
    lawn_stop
  done
done

/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(case, variant, field, durability=None):
    vals = [r[field] for r in rows if r["case"] == case and r["variant"] == variant and field in r
            and (durability is None or r.get("durability") == durability)]
    return statistics.median(vals) if vals else float("nan")
def runs(case, variant, field, durability=None):
    return ", ".join(f"{r[field]:,.0f}" for r in rows if r["case"] == case and r["variant"] == variant
                     and (durability is None or r.get("durability") == durability))
print("| start (StartTimers of 100, 16 in flight, memory) | timers/s | runs | p50 ms | p99 ms | lawnd CPU us/timer | lawn_load CPU us/timer | load 1m |")
print("|---|---|---|---|---|---|---|---|")
for v in ("codes", "return_timers"):
    print(f"| {v} | {med('start', v, 'timers_per_s'):,.0f} | {runs('start', v, 'timers_per_s')} | "
          f"{med('start', v, 'latency_us_p50') / 1e3:.2f} | {med('start', v, 'latency_us_p99') / 1e3:.2f} | "
          f"{med('start', v, 'server_cpu_us_per_timer'):.2f} | {med('start', v, 'client_cpu_us_per_timer'):.2f} | "
          f"{med('start', v, 'loadavg_1m'):.1f} |")
print()
print("| drain | durability | expirations/s | runs | per response | ack messages | lawnd CPU us/expiration | lawn_load CPU us/expiration | load 1m |")
print("|---|---|---|---|---|---|---|---|---|")
for d in ("memory", "sync"):
    for v in ("max_batch=0", "max_batch=1000"):
        print(f"| {v} | {d} | {med('drain', v, 'expirations_per_s', d):,.0f} | {runs('drain', v, 'expirations_per_s', d)} | "
              f"{med('drain', v, 'expirations_per_response', d):.1f} | {med('drain', v, 'ack_messages', d):,.0f} | "
              f"{med('drain', v, 'drain_server_cpu_us_per_expiration', d):.2f} | "
              f"{med('drain', v, 'drain_client_cpu_us_per_expiration', d):.2f} | {med('drain', v, 'loadavg_1m', d):.1f} |")
print()
print("| precision | received | missing | early | per response | lateness p50 ms | p99 ms | p99.9 ms | lawnd CPU us/expiration | load 1m |")
print("|---|---|---|---|---|---|---|---|---|---|")
for v in ("max_batch=0", "max_batch=1000"):
    print(f"| {v} | {med('precision', v, 'received'):,.0f} | {med('precision', v, 'missing'):,.0f} | "
          f"{med('precision', v, 'early'):,.0f} | {med('precision', v, 'expirations_per_response'):.2f} | "
          f"{med('precision', v, 'lateness_us_p50') / 1e3:.2f} | {med('precision', v, 'lateness_us_p99') / 1e3:.2f} | "
          f"{med('precision', v, 'lateness_us_p999') / 1e3:.2f} | {med('precision', v, 'paced_server_cpu_us_per_expiration'):.2f} | "
          f"{med('precision', v, 'loadavg_1m'):.1f} |")
PY
