#!/usr/bin/env bash
# Recovery speed, disk and memory per pending timer, for PENDING_LIST populations (1e6 and 1e7 timers of a
# 1 h TTL, 16-byte ids, no payload, one namespace), lawnd --shards 2 with max_pending_timers 20M:
#   1. durability memory: load, VmRSS -> engine-only bytes per timer (RSS after load minus RSS before).
#   2. durability interval (writes every timer to the store ENGINE names, fsyncs in groups; sync would take far longer to
#      load 1e7, and recovery reads the same data): load, VmRSS, SIGTERM, `du -sb` of the data dir.
#   3. RESTARTS restarts on that data dir: the `recovery done` line (timers/s), start-to-ready seconds, VmRSS
#      after recovery; SIGTERM.
# The data dir is deleted at the end (and on any exit). Needs about 2 GB of free disk for 1e7; refuses to run
# with less than 15 GB free. Bounded: each load is capped at LOAD_CAP (600s); about 5-8 min in all.
#
#   bench/scripts/recovery.sh
#
# Environment (defaults): PENDING_LIST ("1000000 10000000"), RESTARTS (3), SHARDS (2), LOAD_CAP (600s),
# ENGINE (rocksdb; log for storage format 3),
# plus those of load_common.sh. Writes $OUT/raw.jsonl and $OUT/summary.md.
# shellcheck disable=SC2016  # The $names inside single quotes are jq variables.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

PENDING_LIST=${PENDING_LIST:-1000000 10000000}
RESTARTS=${RESTARTS:-3}
ENGINE=${ENGINE:-rocksdb}
SHARDS=${SHARDS:-2}
LOAD_CAP=${LOAD_CAP:-600s}
out_init recovery

free_kib=$(df -Pk "$LAWN_TMP" | awk 'NR == 2 {print $4}')
if ((free_kib < 15 * 1024 * 1024)); then
  echo "less than 15 GB free under $LAWN_TMP; not running" >&2
  exit 1
fi
config=$OUT/lawn.yaml
echo "max_pending_timers: 20000000" >"$config"

record() { jq -nc "$@" | tee -a "$OUT/raw.jsonl"; }

load() {  # load N: N timers of a 1 h TTL, StartTimers of 1000, 8 calls in flight.
  load_run "{\"phase\":\"load\",\"pending\":$1}" --mode batch --batch 1000 --concurrency 8 --count "$1" \
    --duration "$LOAD_CAP" --ttl 1h >/dev/null
}

for n in $PENDING_LIST; do
  # 1. Engine only.
  lawn_start --durability memory --shards "$SHARDS" --config "$config"
  rss0=$(lawn_rss_kib)
  load "$n"
  rss1=$(lawn_rss_kib)
  lawn_stop
  record --argjson n "$n" --argjson rss0 "$rss0" --argjson rss1 "$rss1" \
    '{phase: "rss", durability: "memory", pending: $n, rss_before_kib: $rss0, rss_after_kib: $rss1,
      rss_bytes_per_timer: (($rss1 - $rss0) * 1024 / $n)}'

  # 2. Load into RocksDB.
  LAWN_REUSE_DIR=$(mktemp -d "$LAWN_TMP/recovery.XXXXXX")
  lawn_start --durability interval --storage-engine "$ENGINE" --shards "$SHARDS" --config "$config"
  rss0=$(lawn_rss_kib)
  load "$n"
  rss1=$(lawn_rss_kib)
  lawn_stop
  bytes=$(du -sb "$LAWN_REUSE_DIR" | cut -f1)
  record --argjson n "$n" --argjson rss0 "$rss0" --argjson rss1 "$rss1" --argjson bytes "$bytes" \
    '{phase: "rss", durability: "interval", pending: $n, rss_before_kib: $rss0, rss_after_kib: $rss1,
      rss_bytes_per_timer: (($rss1 - $rss0) * 1024 / $n), disk_bytes: $bytes, disk_bytes_per_timer: ($bytes / $n)}'

  # 3. Restarts.
  for restart in $(seq 1 "$RESTARTS"); do
    lawn_start --durability interval --storage-engine "$ENGINE" --shards "$SHARDS" --config "$config"
    line=$(grep -m1 'recovery done' "$LAWN_LOG")
    rss=$(lawn_rss_kib)
    lawn_stop
    bytes=$(du -sb "$LAWN_REUSE_DIR" | cut -f1)
    timers=$(sed -E 's/.*recovery done: ([0-9]+) timers.*/\1/' <<<"$line")
    seconds=$(sed -E 's/.* in ([0-9.]+) s .*/\1/' <<<"$line")
    rate=$(sed -E 's/.*\(([0-9]+) timers\/s\).*/\1/' <<<"$line")
    record --argjson n "$n" --argjson restart "$restart" --argjson timers "$timers" --argjson seconds "$seconds" \
      --argjson rate "$rate" --argjson ready "$LAWN_READY_S" --argjson rss "$rss" --argjson bytes "$bytes" \
      '{phase: "recovery", pending: $n, restart: $restart, recovered: $timers, recovery_s: $seconds,
        recovery_timers_per_s: $rate, start_to_ready_s: $ready, rss_kib: $rss, rss_bytes_per_timer: ($rss * 1024 / $n),
        disk_bytes_after: $bytes}'
  done
  rm -rf "$LAWN_REUSE_DIR"
  LAWN_REUSE_DIR=""
done

python3 - "$OUT/raw.jsonl" >"$OUT/summary.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = lambda v: statistics.median(v) if v else float("nan")
print("| pending | load timers/s (interval) | recovery timers/s (median; each) | start to ready s | disk bytes/timer "
      "| RSS bytes/timer, memory mode | RSS bytes/timer, interval after load | RSS bytes/timer after recovery | RSS MiB after recovery |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sorted({r["pending"] for r in rows}):
    rs = [r for r in rows if r["pending"] == n]
    loads = [r for r in rs if r.get("phase") == "load"]
    mem = [r for r in rs if r.get("phase") == "rss" and r["durability"] == "memory"]
    itv = [r for r in rs if r.get("phase") == "rss" and r["durability"] == "interval"]
    rec = [r for r in rs if r.get("phase") == "recovery"]
    load_rate = loads[-1]["timers_per_s"] if loads else float("nan")
    each = ", ".join(f"{r['recovery_timers_per_s']:,}" for r in rec)
    print(f"| {n:,} | {load_rate:,.0f} | {med([r['recovery_timers_per_s'] for r in rec]):,.0f} ({each}) "
          f"| {med([r['start_to_ready_s'] for r in rec]):.2f} | {itv[0]['disk_bytes_per_timer']:.1f} "
          f"| {mem[0]['rss_bytes_per_timer']:.1f} | {itv[0]['rss_bytes_per_timer']:.1f} "
          # After recovery: minus the RSS of the empty lawnd that started the interval load.
          f"| {med([(r['rss_kib'] - itv[0]['rss_before_kib']) * 1024 / n for r in rec]):.1f} "
          f"| {med([r['rss_kib'] for r in rec]) / 1024:,.0f} |")
EOF
cat "$OUT/env.txt" "$OUT/summary.md"
