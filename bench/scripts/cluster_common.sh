# Sourced by the cluster benchmarks (cluster_hop.sh, cluster_move.sh): a scratch dir removed at exit with
# every process started through it, an etcd on loopback with fresh data, lawnd members, and CPU accounting
# from /proc. Expects LAWND to be set.

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# User + system ticks of the given processes.
cpu_ticks() { local t=0; for pid in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo "$t"; }

# start_etcd: starts Debian's etcd on loopback (no fsync: etcd is not what is measured); sets ETCD_PORT.
start_etcd() {
  ETCD_PORT=$(free_port)
  local peer
  peer=$(free_port)
  etcd --data-dir "$TMP/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "default=http://127.0.0.1:$peer" --unsafe-no-fsync >"$TMP/etcd.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do etcdctl --endpoints "127.0.0.1:$ETCD_PORT" endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
}

# start_lawnd NAME [flags...]: starts a lawnd on a free loopback port, waits for its recovery, and prints
# "PID PORT DIR".
start_lawnd() {
  local name=$1; shift
  local dir=$TMP/$name-$RANDOM
  mkdir -p "$dir"
  "$LAWND" --listen 127.0.0.1:0 --data-dir "$dir/data" --metrics-listen "" --log-level info "$@" >"$dir/log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  local port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*lawnd listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$dir/log" | head -1)
    [[ -n $port ]] && grep -q 'recovery done' "$dir/log" && break
    sleep 0.1
  done
  echo "$pid $port $dir"
}
