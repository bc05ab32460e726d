#!/usr/bin/env bash
# One subscriber drains 1e6 expirations that fired while nobody was subscribed (lawn_load --mode drain), 3 runs.
source bench/scripts/load_common.sh
LAWND=$PWD/build/server/lawnd
out_init drain
for rep in 1 2 3; do
  lawn_start --durability memory --shards 2
  load_run "{\"rep\":$rep}" --mode drain --count 1000000 --batch 1000 --concurrency 4 --max-in-flight 1000 --max-batch 1000 >/dev/null
  lawn_stop
done
