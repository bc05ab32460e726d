#!/usr/bin/env bash
# What one replicated append per commit round costs (issue 12; BENCHMARKS.md section 13): starts a 3-node
# NATS JetStream cluster on loopback (Debian's nats-server; free ports, data dirs in a temp dir), then for each
# size runs bench/jetstream_append: a local write + fdatasync baseline, ROUNDS appends to an R=3 file stream
# each waiting for its PubAck with Nats-Expected-Last-Sequence set, and the stale-sequence fencing check.
# Stops only the servers it started and removes the temp dir. Bounded: the cluster gets 60 s to elect, each
# size 600 s.
#
# Environment:
#   LAWN_BUILD  build directory holding bench/jetstream_append (default build-nats/ in the repository; e.g.
#               cmake -S . -B build-nats -G Ninja -DLAWN_BUILD_TESTS=OFF -DLAWN_BUILD_SERVER=OFF
#               -DCMAKE_BUILD_TYPE=Release && cmake --build build-nats --target jetstream_append)
#   SIZES       round sizes in bytes (default "4096 65536")
#   ROUNDS      measured rounds per size (default 2000; WARMUP more before, default 100)
#   LAWN_TMP    parent of the temp dir (default $LAWN_BUILD: the disk lawnd's data would be on)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAWN_BUILD=${LAWN_BUILD:-$REPO/build-nats}
BIN=$LAWN_BUILD/bench/jetstream_append
SIZES=${SIZES:-"4096 65536"}
ROUNDS=${ROUNDS:-2000}
WARMUP=${WARMUP:-100}
NATS_SERVER=${NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
[[ -x $BIN ]] || { echo "missing $BIN (needs libnats-dev; see the top of this script)" >&2; exit 2; }
[[ -x $NATS_SERVER ]] || { echo "missing nats-server (apt-get install nats-server)" >&2; exit 2; }

TMP=$(mktemp -d "${LAWN_TMP:-$LAWN_BUILD}/replicated-log.XXXXXX")
PIDS=()
# shellcheck disable=SC2317  # Invoked by the EXIT trap.
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

CLIENT_PORTS=() ROUTE_PORTS=()
for i in 1 2 3; do
  CLIENT_PORTS+=("$(free_port)")
  ROUTE_PORTS+=("$(free_port)")
done
for i in 0 1 2; do
  routes=""
  for j in 0 1 2; do
    [[ $j -eq $i ]] || routes+="${routes:+, }nats-route://127.0.0.1:${ROUTE_PORTS[$j]}"
  done
  mkdir -p "$TMP/n$i"
  cat >"$TMP/n$i.conf" <<EOF
server_name: lawn-n$i
listen: 127.0.0.1:${CLIENT_PORTS[$i]}
jetstream {
  store_dir: "$TMP/n$i"
  max_memory_store: 64MB
  max_file_store: 4GB
}
cluster {
  name: lawn-bench
  listen: 127.0.0.1:${ROUTE_PORTS[$i]}
  routes: [ $routes ]
}
EOF
  "$NATS_SERVER" -c "$TMP/n$i.conf" >"$TMP/n$i.log" 2>&1 &
  PIDS+=($!)
done

# Each server accepts clients before the cluster has a JetStream meta leader; jetstream_append retries the
# stream's creation until it does (at most --ready-timeout s). Here only: the client ports are open.
limit=$((SECONDS + 30))
for i in 0 1 2; do
  until (exec 3<>"/dev/tcp/127.0.0.1/${CLIENT_PORTS[$i]}") 2>/dev/null; do
    if ! kill -0 "${PIDS[$i]}" 2>/dev/null || ((SECONDS > limit)); then
      echo "nats-server $i did not start:" >&2
      cat "$TMP/n$i.log" >&2
      exit 1
    fi
    sleep 0.1
  done
done

urls=$(printf 'nats://127.0.0.1:%s,' "${CLIENT_PORTS[@]}")
urls=${urls%,}
pids=$(IFS=,; echo "${PIDS[*]}")
echo "# $(date -u +%FT%TZ) $("$NATS_SERVER" --version) x3 on 127.0.0.1 (clients ${CLIENT_PORTS[*]}), data in $TMP"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg); rounds=$ROUNDS warmup=$WARMUP"
status=0
for size in $SIZES; do
  timeout 600 "$BIN" --url "$urls" --size "$size" --rounds "$ROUNDS" --warmup "$WARMUP" --replicas 3 \
    --dir "$TMP" --ready-timeout 60 --server-pids "$pids" || status=$?
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
