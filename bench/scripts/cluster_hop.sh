#!/usr/bin/env bash
# The cost of cluster mode's forwarding hop (issue 12): lawn_load starts timers (unary, 64 in flight; batches
# of 100, 16 in flight) against
#   alone     one lawnd without a cluster section,
#   cluster1  a cluster of one member (placement and fence checks, no hop),
#   cluster3  member m0 of a cluster of three on this machine (2/3 of the timers forwarded one hop),
# each ROUNDS times, alternated, in one window. All lawnd run --shards 1 --durability interval on loopback; etcd
# (Debian's etcd-server) runs on loopback with fresh data. Reports timers/s and the CPU microseconds per timer
# of all lawnd processes together (from /proc/PID/stat) and of lawn_load. On a 2-core machine three members
# share the cores with the load generator: the figures show what the hop costs, not how a cluster scales.
# On cluster3 it also runs the C++ client (lawn_batcher_load: unary with 64 threads, StartTimers of 100 with
# 16) through m0 as it forwards, and with ClientOptions::route_directly, which sends each call to its owner.
#
#   LAWN_BUILD=build bench/scripts/cluster_hop.sh          (needs server/lawnd and bench/lawn_load built)
#
# Environment: ROUNDS (3), DURATION (10s), OUT (results dir).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${LAWN_BUILD:-$REPO/build-bench}
LAWND=$BUILD/server/lawnd
LOAD=$BUILD/bench/lawn_load
CLIENT_LOAD=$BUILD/bench/lawn_batcher_load
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
OUT=${OUT:-$BUILD/lawn-net/cluster-hop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

source "$REPO/bench/scripts/cluster_common.sh"
start_etcd

# run CONFIG: starts its lawnd, runs both shapes, stops them.
run() {
  local config=$1 pids=() ports=() port="" cluster="c$RANDOM"
  case $config in
    alone) read -r pid port _ < <(start_lawnd alone --shards 1 --durability interval); pids=("$pid") ;;
    cluster1|cluster3)
      local n=${config#cluster}
      printf 'cluster:\n  name: %s\n  partitions: 1024\n  lease_ttl: 10s\n  expect_members: %s\n' "$cluster" "$n" >"$TMP/$cluster.yaml"
      for i in $(seq 0 $((n - 1))); do
        read -r pid p _ < <(start_lawnd "m$i" --shards 1 --durability interval --config "$TMP/$cluster.yaml" \
          --cluster-etcd-endpoints "127.0.0.1:$ETCD_PORT" --cluster-member "m$i" --cluster-advertise 127.0.0.1:0)
        pids+=("$pid")
        ports+=("$p")
      done
      port=${ports[0]}
      # Formed once every member sees every partition owned.
      for p in "${ports[@]}"; do
        for _ in $(seq 300); do
          status=$("$BUILD/client/lawnctl" --addr "127.0.0.1:$p" cluster status 2>/dev/null || true)
          [[ $status == *"leader m"* && $status != *"no owner"* ]] && break
          sleep 0.1
        done
      done ;;
  esac
  for mode in unary batch; do
    local args=(--target "127.0.0.1:$port" --mode "$mode" --duration "$DURATION" --count 100000000 --json)
    if [[ $mode == unary ]]; then args+=(--concurrency 64); else args+=(--concurrency 16 --batch 100); fi
    local before load_line after
    before=$(cpu_ticks "${pids[@]}")
    load_line=$("$LOAD" "${args[@]}" | tail -1 || true)  # Non-zero on call errors: they are in the line.
    after=$(cpu_ticks "${pids[@]}")
    echo "{\"config\":\"$config\",\"mode\":\"$mode\",\"lawnd_cpu_ticks\":$((after - before)),\"load\":$load_line,\"loadavg\":\"$(cut -d' ' -f1 /proc/loadavg)\"}" |
      tee -a "$OUT/raw.jsonl"
  done
  if [[ $config == cluster3 ]]; then
    for client in forwarded direct; do
      for mode in unary batch; do
        local args=(--target "127.0.0.1:$port" --duration "$DURATION" --json)
        if [[ $mode == unary ]]; then args+=(--mode unary --threads 64); else args+=(--mode batch --threads 16 --max-batch 100); fi
        if [[ $client == direct ]]; then args+=(--route-directly); fi
        local before load_line after
        before=$(cpu_ticks "${pids[@]}")
        load_line=$("$CLIENT_LOAD" "${args[@]}" | tail -1 || true)
        after=$(cpu_ticks "${pids[@]}")
        echo "{\"config\":\"client-$client\",\"mode\":\"$mode\",\"lawnd_cpu_ticks\":$((after - before)),\"load\":$load_line,\"loadavg\":\"$(cut -d' ' -f1 /proc/loadavg)\"}" |
          tee -a "$OUT/raw.jsonl"
      done
    done
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

for round in $(seq "$ROUNDS"); do
  for config in ${CONFIGS:-alone cluster1 cluster3}; do run "$config"; done
done
/usr/bin/python3 - "$OUT/raw.jsonl" <<'EOF' | tee "$OUT/summary.txt"
import json, statistics, sys, os
hz = os.sysconf("SC_CLK_TCK")
rows = [json.loads(l) for l in open(sys.argv[1])]
# client-forwarded and client-direct: the C++ client against m0 of cluster3 (its own shapes; compare the two).
print("| config | shape | timers/s (median) | vs alone | lawnd CPU us/timer (all members) | errors | load 1m |")
print("|---|---|---|---|---|---|---|")
base = {}
for mode in ("unary", "batch"):
    for config in ("alone", "cluster1", "cluster3", "client-forwarded", "client-direct"):
        rs = [r for r in rows if r["config"] == config and r["mode"] == mode]
        if not rs:
            continue
        rates = [r["load"]["timers_per_s"] for r in rs]
        cpus = [r["lawnd_cpu_ticks"] / hz * 1e6 / max(1, r["load"]["timers"]) for r in rs]
        rate = statistics.median(rates)
        base.setdefault(mode, rate)
        errors = sum(r["load"].get("timer_errors", r["load"].get("errors", 0)) for r in rs)
        print(f"| {config} | {mode} | {rate:,.0f} | {rate / base[mode]:.2f} | {statistics.median(cpus):.2f} | {errors} | "
              f"{', '.join(r['loadavg'] for r in rs)} |")
EOF
