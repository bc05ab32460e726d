#!/usr/bin/env bash
# Firing under load, A/B of two lawnd binaries in one window: lawn_load's precision mode starts RATE short
# timers per second (batches of 100, TTL uniform 100 ms..2 s) for DURATION while one subscriber
# (max_in_flight 1000) acks everything, so expirations fire, are written and are delivered while starts keep
# arriving. Memory and sync durability, REPS rounds, A and B alternating run by run. Prints medians of the
# start rate reached, expirations received, missing and early ones, and `received - deadline` (p50, p99,
# max) plus lawnd's own `fired_at - deadline` p99.
#
#   LAWND_A=/tmp/old/lawnd LAWND_B=build-bench/server/lawnd bench/scripts/firing_ab.sh
#
# The two sides may also be one binary with other flags (EXTRA_A, EXTRA_B), e.g. the tick:
#   LAWND_A=build-bench/server/lawnd EXTRA_A="--tick 1ms" LAWND_B=build-bench/server/lawnd EXTRA_B="--tick 10ms" ...
#
# Environment (defaults): LAWND_A, LAWND_B (LAWND_B alone runs one side), EXTRA_A, EXTRA_B (""), REPS (3), RATE (100000),
# DURATION (10s), TTL_MIN (100ms), TTL_MAX (2s), DURABILITIES ("memory sync"), IN_FLIGHT (1000: the subscriber's
# open.max_in_flight; IN_FLIGHT_A and IN_FLIGHT_B set one side's), plus those of load_common.sh.
# Issue 11's burst (as many starts as lawnd takes for a few seconds, all firing 15 s later while one subscriber
# acks): RATE=2000000 DURATION=2s TTL_MIN=15s TTL_MAX=15s. Bounded: about
# REPS x modes x sides x (DURATION + 5 s).
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

: "${LAWND_B:?set LAWND_B}"
REPS=${REPS:-3}
RATE=${RATE:-100000}
DURATION=${DURATION:-10s}
DURABILITIES=${DURABILITIES:-memory sync}
SIDES=$([[ -n ${LAWND_A:-} ]] && echo "A B" || echo "B")
out_init firing_ab

for rep in $(seq 1 "$REPS"); do
  for durability in $DURABILITIES; do
    for side in $SIDES; do
      bin_var="LAWND_$side"
      LAWND=${!bin_var}
      extra_var="EXTRA_$side"
      in_flight_var="IN_FLIGHT_$side"
      # shellcheck disable=SC2086  # EXTRA_* are word lists of flags.
      lawn_start --durability "$durability" --shards 2 ${!extra_var:-}
      load_run "{\"side\":\"$side\",\"durability\":\"$durability\",\"rep\":$rep}" \
        --mode precision --pending 0 --rate "$RATE" --duration "$DURATION" \
        --ttl 1h --ttl-min "${TTL_MIN:-100ms}" --ttl-max "${TTL_MAX:-2s}" --batch 100 \
        --max-in-flight "${!in_flight_var:-${IN_FLIGHT:-1000}}" >/dev/null
      lawn_stop
    done
  done
done

/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["durability"], r["side"]), []).append(r)
print("| durability | side | started/s | received | missing | early | p50 ms | p99 ms | max ms | lawnd fired p99 ms "
      "| lawnd CPU us/timer (start+fire+deliver) | p99 of each run, ms | load 1m |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (dur, side), rs in sorted(groups.items()):
    med = lambda k: statistics.median(r.get(k, float("nan")) for r in rs)
    each = ", ".join(f"{r['lateness_us_p99'] / 1e3:.1f}" for r in rs)
    print(f"| {dur} | {side} | {med('start_timers_per_s'):,.0f} | {med('received'):,.0f} "
          f"| {sum(r['missing'] for r in rs)} | {sum(r['early'] + r['fired_early'] for r in rs)} "
          f"| {med('lateness_us_p50') / 1e3:.2f} | {med('lateness_us_p99') / 1e3:.2f} | {med('lateness_us_max') / 1e3:.1f} "
          f"| {med('fire_lateness_us_p99') / 1e3:.2f} | {statistics.median(r['server_cpu_s'] / r['started'] * 1e6 for r in rs):.2f} | {each} "
          f"| {statistics.median(r['loadavg_1m'] for r in rs):.1f} |")
PY
