#!/usr/bin/env bash
# How long `lawnctl checkpoint` takes with each storage engine, and what it writes: for each ENGINE, a fresh
# lawnd (--durability interval --shards 2) is loaded with PENDING timers of a 1 h TTL (StartTimers of 1000,
# 8 calls in flight), then CHECKPOINTS checkpoints are taken one after another; each line gives the seconds,
# the checkpoint's bytes (`du -sb`, which counts hard-linked files in full) and the data dir's.
# Bounded: the load is capped at 120 s; about 30 s per engine here.
#
#   LAWN_BUILD=$PWD/build bench/scripts/checkpoint_time.sh
#
# Environment (defaults): ENGINES ("rocksdb log"), PENDING (1000000), CHECKPOINTS (3), plus those of
# load_common.sh. Writes $OUT/summary.txt.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

ENGINES=${ENGINES:-rocksdb log}
PENDING=${PENDING:-1000000}
CHECKPOINTS=${CHECKPOINTS:-3}
LAWNCTL=${LAWNCTL:-$LAWN_BUILD/client/lawnctl}
out_init checkpoint_time

for engine in $ENGINES; do
  lawn_start --durability interval --storage-engine "$engine" --shards 2
  load_run "{\"phase\":\"load\",\"engine\":\"$engine\"}" --mode batch --batch 1000 --concurrency 8 \
    --count "$PENDING" --duration 120s --ttl 1h >/dev/null
  for i in $(seq 1 "$CHECKPOINTS"); do
    t0=$(date +%s.%N)
    "$LAWNCTL" --addr "127.0.0.1:$LAWN_PORT" checkpoint "c$i" >/dev/null || echo "checkpoint c$i failed" >&2
    t1=$(date +%s.%N)
    printf '%s checkpoint %d: %.3f s, %s bytes, data dir %s bytes, load %s\n' "$engine" "$i" \
      "$(echo "$t1 - $t0" | bc)" "$(du -sb "$LAWN_DIR/checkpoints/c$i" | cut -f1)" \
      "$(du -sb --exclude=checkpoints "$LAWN_DIR" | cut -f1)" "$(cut -d' ' -f1 /proc/loadavg)" |
      tee -a "$OUT/summary.txt"
  done
  lawn_stop
done
