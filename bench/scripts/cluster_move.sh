#!/usr/bin/env bash
# The time to move 1e6 timers between cluster members (issue 12). Each round: member m0 forms a cluster alone
# (1024 partitions, durability sync, 2 shards) and lawn_load starts COUNT timers into it (batches of 100, 16
# in flight, TTL 1 h: nothing fires). Then m1 starts and m0 is drained (lawnctl cluster drain m0): the leader
# hands all 1024 partitions to m1, 64 at a time, and the round measures how long until m0 owns none. The
# baseline, in the same round, is the load itself: the same timers started through the API into m0.
# Reports timers/s of each, the move's ratio to the load, the CPU microseconds per timer of both lawnd
# together (from /proc/PID/stat), and the hand-overs' freeze times (from m0's log).
#
#   LAWN_BUILD=build bench/scripts/cluster_move.sh   (needs server/lawnd, client/lawnctl and bench/lawn_load)
#
# Environment: ROUNDS (3), COUNT (1000000), OUT (results dir).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${LAWN_BUILD:-$REPO/build-bench}
LAWND=$BUILD/server/lawnd
LOAD=$BUILD/bench/lawn_load
LAWNCTL=$BUILD/client/lawnctl
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-1000000}
OUT=${OUT:-$BUILD/lawn-net/cluster-move-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
source "$REPO/bench/scripts/cluster_common.sh"
start_etcd

now_ns() { date +%s%N; }

for round in $(seq "$ROUNDS"); do
  cluster="mv$round$RANDOM"
  printf 'cluster:\n  name: %s\n  partitions: 1024\n  lease_ttl: 10s\n  expect_members: 1\n' "$cluster" >"$TMP/$cluster.yaml"
  member() {
    start_lawnd "$1" --shards 2 --config "$TMP/$cluster.yaml" --cluster-etcd-endpoints "127.0.0.1:$ETCD_PORT" \
      --cluster-member "$1" --cluster-advertise 127.0.0.1:0
  }
  read -r pid0 port0 dir0 < <(member m0)
  for _ in $(seq 300); do
    [[ $("$LAWNCTL" --addr "127.0.0.1:$port0" cluster status 2>/dev/null || true) == *"m0  127.0.0.1:$port0  1024 partitions"* ]] && break
    sleep 0.1
  done
  before=$(cpu_ticks "$pid0")
  load_line=$("$LOAD" --target "127.0.0.1:$port0" --mode batch --batch 100 --concurrency 16 --count "$COUNT" --ttl 1h --json | tail -1)
  load_ticks=$(($(cpu_ticks "$pid0") - before))
  read -r pid1 port1 dir1 < <(member m1)
  before=$(cpu_ticks "$pid0" "$pid1")
  start=$(now_ns)
  "$LAWNCTL" --addr "127.0.0.1:$port1" cluster drain m0 --for 20m >"$TMP/drain.out"
  end=$(now_ns)
  move_ticks=$(($(cpu_ticks "$pid0" "$pid1") - before))
  # Freeze per hand-over ("hand-over m0-...: 64 partitions to m1: N timers and 0 expirations in X s").
  freezes=$(sed -n 's/.*hand-over .*: 64 partitions to m1: \([0-9]*\) timers and [0-9]* expirations in \([0-9.]*\) s.*/\1 \2/p' "$dir0/log" | tr '\n' ';')
  grep 'hand-over' "$dir0/log" >"$OUT/handovers-$round.log" || true
  moved=$("$LAWNCTL" --addr "127.0.0.1:$port1" stats --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("pendingTimers", 0))')
  echo "{\"round\":$round,\"count\":$COUNT,\"load\":$load_line,\"load_ticks\":$load_ticks,\"move_ns\":$((end - start)),\"move_ticks\":$move_ticks,\"pending_after\":$moved,\"freezes\":\"$freezes\",\"loadavg\":\"$(cut -d' ' -f1 /proc/loadavg)\"}" |
    tee -a "$OUT/raw.jsonl"
  kill -TERM "$pid0" "$pid1"
  wait "$pid0" "$pid1" 2>/dev/null || true
done
/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys, os
hz = os.sysconf("SC_CLK_TCK")
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(xs): return statistics.median(xs)
load_rate = med([r["load"]["timers_per_s"] for r in rows])
move_rate = med([r["count"] / (r["move_ns"] * 1e-9) for r in rows])
load_cpu = med([r["load_ticks"] / hz * 1e6 / r["count"] for r in rows])
move_cpu = med([r["move_ticks"] / hz * 1e6 / r["count"] for r in rows])
freezes = [float(f.split()[1]) for r in rows for f in r["freezes"].split(";") if f.strip()]
print("| | timers/s (median) | vs the load | lawnd CPU us/timer | seconds for the 1e6 (median) |")
print("|---|---|---|---|---|")
print(f"| start through the API (batches of 100, baseline) | {load_rate:,.0f} | 1.00 | {load_cpu:.2f} | {rows[0]['count'] / load_rate:.1f} |")
print(f"| move m0 -> m1 (drain, 16 hand-overs of 64 partitions) | {move_rate:,.0f} | {move_rate / load_rate:.2f} | {move_cpu:.2f} | {med([r['move_ns'] * 1e-9 for r in rows]):.1f} |")
if freezes:
    print(f"\nfreeze per hand-over of 64 partitions (~{rows[0]['count'] // 16:,} timers): median {med(freezes):.2f} s, max {max(freezes):.2f} s")
print("pending on m1 after each move: " + ", ".join(str(r["pending_after"]) for r in rows))
print("load average (1 min) per round: " + ", ".join(r["loadavg"] for r in rows))
PY
