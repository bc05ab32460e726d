#!/usr/bin/env bash
# RSS per pending timer (issue 11): lawnd --durability memory --shards SHARDS, lawn_load starts COUNT timers
# of a 1 h TTL (16-byte ids, no payload, one namespace; StartTimers of 1000, 16 calls in flight), then VmRSS
# minus the idle VmRSS, divided by COUNT. Also records /proc/PID/smaps_rollup after the load and, with
# TRIM=1, the RSS after gdb makes lawnd call malloc_trim(0) (how much of the RSS is free memory that glibc
# kept). REPS runs; one JSON line each in $OUT/raw.jsonl.
#
#   bench/scripts/rss.sh            # LAWND_ENV="GLIBC_TUNABLES=..." to try allocator settings
#
# Environment (defaults): COUNT (10000000), REPS (3), SHARDS (2), TRIM (0), LAWND_ENV (""), TAG (""), plus
# those of load_common.sh.
# shellcheck source=bench/scripts/load_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

COUNT=${COUNT:-10000000}
REPS=${REPS:-3}
SHARDS=${SHARDS:-2}
TRIM=${TRIM:-0}
TAG=${TAG:-}
out_init rss
config=$OUT/lawn.yaml
echo "max_pending_timers: 20000000" >"$config"

for rep in $(seq 1 "$REPS"); do
  # LAWND_ENV (NAME=VALUE words) reaches lawnd only: exported for lawn_start, unset before lawn_load runs.
  for word in ${LAWND_ENV:-}; do export "${word?}"; done
  lawn_start --durability memory --shards "$SHARDS" --config "$config"
  for word in ${LAWND_ENV:-}; do unset "${word%%=*}"; done
  sleep 1
  rss0=$(lawn_rss_kib)
  load=$(load_run "{\"phase\":\"load\",\"rep\":$rep,\"tag\":\"$TAG\"}" --mode batch --batch 1000 --concurrency 16 \
    --count "$COUNT" --duration 600s --ttl 1h)
  sleep 2
  rss1=$(lawn_rss_kib)
  anon=$(awk '/^Anonymous:/ {print $2}' "/proc/$LAWN_PID/smaps_rollup")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$LAWN_PID/status")
  rss2=0
  if ((TRIM)); then
    timeout 60 gdb -p "$LAWN_PID" -batch -ex "call (int) malloc_trim(0)" >"$OUT/gdb.log" 2>&1 || true
    rss2=$(lawn_rss_kib)
  fi
  lawn_stop
  jq -nc --argjson n "$COUNT" --argjson rss0 "$rss0" --argjson rss1 "$rss1" --argjson rss2 "$rss2" \
    --argjson anon "$anon" --argjson threads "$threads" --argjson rep "$rep" --arg tag "$TAG" \
    --arg env "${LAWND_ENV:-}" --argjson load "$load" --arg la "$(cut -d' ' -f1-3 /proc/loadavg)" \
    '{phase: "rss", tag: $tag, env: $env, rep: $rep, pending: $n, rss_idle_kib: $rss0, rss_after_kib: $rss1,
      anon_after_kib: $anon, threads: $threads, rss_after_trim_kib: $rss2, loadavg: $la,
      rss_bytes_per_timer: (($rss1 - $rss0) * 1024 / $n),
      rss_bytes_per_timer_after_trim: (if $rss2 > 0 then ($rss2 - $rss0) * 1024 / $n else null end),
      load: $load}' | tee -a "$OUT/raw.jsonl"
done
