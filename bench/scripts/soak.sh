#!/usr/bin/env bash
# Soak test: one lawnd (started here, stopped here, by its PID), N minutes of mixed traffic at a fixed rate
# from bench/soak.py, lawnd's RSS / fds / threads / GetStats sampled every 10 s, then a bounded drain and the
# loss check (nothing started and not deleted may be undelivered, nothing delivered before its deadline).
#
# Usage: bench/scripts/soak.sh [--minutes N] [--rate R] [--durability M] [--out DIR] [--build DIR]
#                               [-- extra soak.py flags]
#   --minutes N     length of the load phase (default 30; `--minutes 2` for a quick check)
#   --rate R        one-shot StartTimer calls per second; the other operations scale with it (default 200)
#   --durability M  sync (default), interval, or memory (a control run without RocksDB)
#   --out DIR       where samples.csv, result.json, summary.txt, soak.png, lawnd.log go
#                   (default /tmp/lawn-soak/soak-<date>-<time>)
#   --build DIR     build directory holding server/lawnd (default <repo>/build; build it with
#                   cmake --build build -j2 --target lawnd)
#
# lawnd runs with durability sync (unless --durability), 2 shards, gRPC and /metrics on loopback ports picked
# by the kernel, data in a fresh temp dir (removed at the end), ack_timeout 5s and max_outbox_per_namespace
# 2000 (so the namespace that has no subscriber during the load fills its outbox to the bound and stays
# there). Every wait is bounded; the driver runs under `timeout`. Exit status: the driver's (0 pass, 1
# lost/early/anomaly), or 3 if lawnd did not exit 0 on SIGTERM, 2 on a setup error.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MINUTES=30
RATE=200
DURABILITY=sync
MAX_OUTBOX=2000
OUT=""
BUILD=$REPO/build
EXTRA=()
while (($#)); do
  case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --durability) DURABILITY=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "--minutes: a number, got '$MINUTES'" >&2; exit 2; }
LAWND=$BUILD/server/lawnd
[[ -x $LAWND ]] || { echo "missing $LAWND; build it: cmake --build $BUILD -j2 --target lawnd" >&2; exit 2; }
PY=/usr/bin/python3  # Debian's: python3-grpcio, python3-protobuf, python3-matplotlib.
"$PY" -c 'import grpc, google.protobuf' ||
  { echo "$PY lacks grpcio/protobuf (apt-get install python3-grpcio python3-protobuf)" >&2; exit 2; }
[[ -x /usr/bin/grpc_python_plugin ]] ||
  { echo "missing /usr/bin/grpc_python_plugin (apt-get install protobuf-compiler-grpc)" >&2; exit 2; }

mkdir -p /tmp/lawn-soak
OUT=${OUT:-/tmp/lawn-soak/soak-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/lawn-soak/run.XXXXXX)
LOG=$OUT/lawnd.log
LAWN_PID=""

stop_lawnd() {  # SIGTERM to our lawnd only; SIGKILL after 60 s. Sets LAWN_EXIT.
  LAWN_EXIT=0
  [[ -n $LAWN_PID ]] || return 0
  kill -TERM "$LAWN_PID" 2>/dev/null || true
  local limit=$((SECONDS + 60))
  while kill -0 "$LAWN_PID" 2>/dev/null && ((SECONDS < limit)); do sleep 0.1; done
  if kill -0 "$LAWN_PID" 2>/dev/null; then
    echo "lawnd $LAWN_PID ignored SIGTERM for 60 s; SIGKILL" >&2
    kill -KILL "$LAWN_PID" 2>/dev/null || true
  fi
  wait "$LAWN_PID" || LAWN_EXIT=$?
  LAWN_PID=""
}
# shellcheck disable=SC2317  # Invoked by the EXIT trap.
cleanup() {
  stop_lawnd || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/lawn.yaml" <<EOF
listen: "127.0.0.1:0"
metrics_listen: "127.0.0.1:0"
data_dir: "$WORK/data"
shards: 2
durability: $DURABILITY
ack_timeout: 5s
max_outbox_per_namespace: $MAX_OUTBOX
log_level: info
EOF

LOADAVG=$(uptime)
echo "uptime at start: $LOADAVG" | tee "$OUT/uptime.txt"
cp "$WORK/lawn.yaml" "$OUT/lawn.yaml"
: >"$LOG"
"$LAWND" --config "$WORK/lawn.yaml" >"$LOG" 2>&1 &
LAWN_PID=$!
limit=$((SECONDS + 60))
until grep -q 'recovery done' "$LOG" && grep -q 'listening on' "$LOG" && grep -q 'metrics on' "$LOG"; do
  if ! kill -0 "$LAWN_PID" 2>/dev/null || ((SECONDS > limit)); then
    echo "lawnd did not start:" >&2
    cat "$LOG" >&2
    exit 2
  fi
  sleep 0.1
done
PORT=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$LOG" | head -1 | sed 's/.*://')
MPORT=$(grep -o 'metrics on http://127\.0\.0\.1:[0-9]*' "$LOG" | head -1 | sed 's/.*://')
echo "lawnd pid $LAWN_PID, gRPC 127.0.0.1:$PORT, metrics 127.0.0.1:$MPORT, data $WORK/data, out $OUT"

# Load + 120 s drain + stub generation and slack; `timeout` stops the driver whatever happens.
BOUND=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 + 400 }')
set +e
timeout --kill-after=30 "$BOUND" "$PY" "$REPO/bench/soak.py" --port "$PORT" --pid "$LAWN_PID" \
  --metrics-port "$MPORT" --minutes "$MINUTES" --rate "$RATE" --max-outbox "$MAX_OUTBOX" --out "$OUT" \
  --proto-dir "$REPO/proto" \
  ${EXTRA[@]+"${EXTRA[@]}"} 2>&1 | tee "$OUT/driver.log"
DRIVER_RC=${PIPESTATUS[0]}
set -e
((DRIVER_RC == 124)) && echo "soak.py did not finish within $BOUND s" >&2

stop_lawnd
echo "lawnd exit status after SIGTERM: $LAWN_EXIT" | tee -a "$OUT/summary.txt"
# Log lines by level (text format: "<time> <level> [<thread>] <message>"), and each distinct warning/error
# shape (numbers replaced by N).
{
  echo "lawnd log lines by level:"
  awk '{print $2}' "$LOG" | sort | uniq -c
  echo "distinct warning/error/critical messages:"
  awk '$2 == "warning" || $2 == "error" || $2 == "critical" { $1 = ""; $3 = ""; print }' "$LOG" |
    sed 's/[0-9][0-9.]*/N/g' | sort | uniq -c | sort -rn | head -20
} | tee -a "$OUT/summary.txt"

"$PY" "$REPO/bench/plot_soak.py" "$OUT/samples.csv" "$OUT/soak.png" \
  --title "lawnd soak, ${MINUTES} min, $RATE one-shot starts/s ($DURABILITY)" ||
  echo "plot failed" >&2

if ((DRIVER_RC == 0 && LAWN_EXIT != 0)); then
  exit 3
fi
exit "$DRIVER_RC"
