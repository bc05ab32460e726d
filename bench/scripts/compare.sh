#!/usr/bin/env bash
# lawnd beside the gRPC floor and two peers, in one window (BENCHMARKS.md section 9, issue 11). Each run
# starts one server fresh on 127.0.0.1, loads it for DURATION, stops it; systems alternate run by run for
# REPS rounds, so every ratio pairs runs taken seconds apart on a shared machine. Two shapes:
#   unary: one timer per request, 64 requests in flight   batch: 100 timers per request, 16 in flight
# Systems (SYSTEMS picks and orders them; peers are skipped with a note when not installed):
#   floor           bench/lawn_grpc_floor: lawn's proto on gRPC's callback API, no work (StartTimer[s] -> OK)
#   lawnd-memory    lawnd --shards 2 --durability memory     (nothing on disk)
#   lawnd-interval  lawnd --shards 2 --durability interval   (written at once, fsynced in groups every 50 ms)
#   lawnd-sync      lawnd --shards 2 --durability sync       (fsynced before the answer)
#   redis-no        redis-server, AOF with appendfsync no     (written at once, fsync left to the kernel)
#   redis-always    redis-server, AOF with appendfsync always (fsynced before the answers of an event-loop round)
#   beanstalkd-f50  beanstalkd -b DIR -f50 (binlog written at once, fsync at most every 50 ms)
#   beanstalkd-f0   beanstalkd -b DIR -f0  (binlog fsynced after every put, before its answer)
# Loads: lawn_load (one gRPC connection, StartTimer / StartTimers of 100, ttl 1h) for floor and lawnd;
# redis-benchmark -t zadd (random members; -c 64 -P 1 / -c 16 -P 100) for redis; bench/beanstalk_put (delayed
# puts, 16-byte bodies; --connections 64 --pipeline 1 / 16 and 100) for beanstalkd. Peers have no
# multiplexing, so their "in flight" is that many connections (or pipelined commands), not gRPC streams.
#
# Prints, per shape, the median rate (timers, ZADDs or puts per second), ratios, and beside every rate the
# server's CPU microseconds per operation (utime+stime from /proc/PID/stat before and after) and the
# loader's, plus the 1-minute load average. Raw JSON lines in $OUT/raw.jsonl, the tables in $OUT/summary.md
# (bench/scripts/compare_summary.py RAW.jsonl prints them again, e.g. for a kept run in bench/results/).
# About 4 minutes with the defaults.
#
#   cmake --build build-bench -j2 --target lawnd lawn_load lawn_grpc_floor beanstalk_put
#   bench/scripts/compare.sh
#
# Environment (defaults): REPS (3), DURATION (4s), WARMUP (0.5s: peers only; their window starts after it),
# SHAPES ("unary batch"), SYSTEMS (all of the above), CHANNELS (1: lawn_load's gRPC connections), plus those of
# load_common.sh (LAWN_BUILD, LAWN_TMP, OUT). Peers: apt-get install redis-server beanstalkd (or
# .ci/install-deps --bench). Everything listens on 127.0.0.1 only; every process this script starts is
# stopped by its PID; temp dirs (under LAWN_TMP) are removed on exit.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

REPS=${REPS:-3}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-0.5s}
SHAPES=${SHAPES:-unary batch}
SYSTEMS=${SYSTEMS:-floor lawnd-memory lawnd-interval lawnd-sync redis-no redis-always beanstalkd-f50 beanstalkd-f0}
CHANNELS=${CHANNELS:-1}
FLOOR=$LAWN_BUILD/bench/lawn_grpc_floor
BEANSTALK_PUT=$LAWN_BUILD/bench/beanstalk_put

# The systems that can run here; a missing peer is dropped with a note, a missing lawn binary stops us.
runnable=()
for system in $SYSTEMS; do
  case $system in
    floor) [[ -x $FLOOR ]] || { echo "missing $FLOOR; build it: cmake --build $LAWN_BUILD --target lawn_grpc_floor" >&2; exit 2; } ;;
    lawnd-memory | lawnd-interval | lawnd-sync) ;;
    redis-no | redis-always)
      if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        echo "note: $system skipped: redis-server / redis-benchmark not installed (.ci/install-deps --bench)" >&2
        continue
      fi ;;
    beanstalkd-f50 | beanstalkd-f0)
      if ! command -v beanstalkd >/dev/null; then
        echo "note: $system skipped: beanstalkd not installed (.ci/install-deps --bench)" >&2
        continue
      fi
      [[ -x $BEANSTALK_PUT ]] || { echo "missing $BEANSTALK_PUT; build it: cmake --build $LAWN_BUILD --target beanstalk_put" >&2; exit 2; } ;;
    *) echo "unknown system $system in SYSTEMS" >&2; exit 2 ;;
  esac
  runnable+=("$system")
done
((${#runnable[@]} > 0)) || { echo "nothing to run" >&2; exit 2; }

PEER_PID=""
PEER_DIR=""
LOADER_PID=""
FAILURES=()

# stop_pid PID: SIGTERM to a process this shell started, SIGKILL if it is still there after 30 s; reaps it.
# (Not SIGINT: a non-interactive shell starts background commands with SIGINT ignored.)
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  local limit=$((SECONDS + 30))
  while kill -0 "$1" 2>/dev/null && ((SECONDS < limit)); do sleep 0.05; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# peer_stop: stops the peer loader and server we started (by PID); removes the peer's temp dir.
peer_stop() {
  local pid
  for pid in $LOADER_PID $PEER_PID; do stop_pid "$pid"; done
  LOADER_PID=""
  PEER_PID=""
  [[ -n $PEER_DIR ]] && rm -rf "$PEER_DIR"
  PEER_DIR=""
  return 0
}

compare_cleanup() {
  peer_stop
  lawn_cleanup
}
trap compare_cleanup EXIT

# free_port: a loopback port nobody listens on now (the peers take a fixed port; start_peer retries if it was
# taken in between).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks PID: utime+stime of PID in clock ticks (fields 14 and 15 of /proc/PID/stat, counted after the
# parenthesized command name).
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat")
  stat=${stat##*) }
  awk '{print $12 + $13}' <<<"$stat"
}
CLK_TCK=$(getconf CLK_TCK)

# floor_start: the floor on a free port; sets LAWN_PID, LAWN_PORT, LAWN_LOG (so load_run and lawn_stop of
# load_common.sh serve it as they serve lawnd).
floor_start() {
  LAWN_DIR=""
  LAWN_LOG=$(mktemp "$LAWN_TMP/floor.XXXXXX.log")
  "$FLOOR" --listen 127.0.0.1:0 >"$LAWN_LOG" 2>&1 &
  LAWN_PID=$!
  local limit=$((SECONDS + 30))
  until grep -q 'listening on' "$LAWN_LOG"; do
    if ! kill -0 "$LAWN_PID" 2>/dev/null || ((SECONDS > limit)); then
      echo "lawn_grpc_floor did not start:" >&2
      cat "$LAWN_LOG" >&2
      lawn_stop
      return 1
    fi
    sleep 0.05
  done
  LAWN_PORT=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$LAWN_LOG" | head -1 | sed 's/.*://')
}

# peer_start SYSTEM: starts redis-server or beanstalkd for SYSTEM on a free loopback port with a fresh temp
# dir (under LAWN_TMP: the disk lawnd writes to); waits until it accepts connections. Sets PEER_PID,
# PEER_PORT, PEER_DIR. Up to 3 attempts (a port taken between free_port and the bind).
peer_start() {
  local system=$1 attempt limit
  for attempt in 1 2 3; do
    PEER_DIR=$(mktemp -d "$LAWN_TMP/$system.XXXXXX")
    PEER_PORT=$(free_port)
    case $system in
      redis-*)
        # No RDB snapshots and no AOF rewrite (a forked child whose CPU /proc/PID/stat would not show).
        redis-server --bind 127.0.0.1 --port "$PEER_PORT" --dir "$PEER_DIR" --save "" --appendonly yes \
          --appendfsync "${system#redis-}" --auto-aof-rewrite-percentage 0 --daemonize no \
          --logfile "$PEER_DIR/redis.log" &
        ;;
      beanstalkd-f*)
        beanstalkd -l 127.0.0.1 -p "$PEER_PORT" -b "$PEER_DIR" -f "${system#beanstalkd-f}" 2>"$PEER_DIR/stderr" &
        ;;
    esac
    PEER_PID=$!
    limit=$((SECONDS + 10))
    while kill -0 "$PEER_PID" 2>/dev/null && ((SECONDS < limit)); do
      if [[ $system == redis-* ]]; then
        [[ $(redis-cli -h 127.0.0.1 -p "$PEER_PORT" ping 2>/dev/null) == PONG ]] && return 0
      elif (exec 3<>"/dev/tcp/127.0.0.1/$PEER_PORT") 2>/dev/null; then
        return 0
      fi
      sleep 0.05
    done
    echo "$system did not start on port $PEER_PORT (attempt $attempt):" >&2
    cat "$PEER_DIR"/redis.log "$PEER_DIR"/stderr 2>/dev/null >&2 || true
    peer_stop
  done
  return 1
}

# append_row EXTRA_JSON FIELDS_JSON: one line of $OUT/raw.jsonl (with the load average), echoed.
append_row() {
  local line
  line=$(jq -cn --argjson extra "$1" --argjson fields "$2" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
    '$extra + $fields + {loadavg_1m: ($load | tonumber)}')
  echo "$line" >>"$OUT/raw.jsonl"
  echo "$line"
}

# zadd_calls: ZADDs our redis-server has executed so far (INFO commandstats).
zadd_calls() {
  redis-cli -h 127.0.0.1 -p "$PEER_PORT" info commandstats | tr -d '\r' |
    sed -n 's/^cmdstat_zadd:calls=\([0-9]*\),.*/\1/p'
}

# redis_run EXTRA_JSON CONNECTIONS PIPELINE: redis-benchmark ZADD against our redis-server; after WARMUP,
# counts the ZADDs redis executed (INFO commandstats) and both processes' CPU over DURATION.
redis_run() {
  local extra=$1 conns=$2 pipe=$3 log="$PEER_DIR/benchmark.log"
  # -n bounds the count; the window below bounds the time (the benchmark is stopped after it).
  redis-benchmark -h 127.0.0.1 -p "$PEER_PORT" -c "$conns" -P "$pipe" -n 200000000 -r 100000000 -t zadd -q \
    >"$log" 2>&1 &
  LOADER_PID=$!
  sleep "$WARMUP"
  local t0 calls0 server0 client0 t1 calls1 server1 client1 alive=1
  calls0=$(zadd_calls)
  t0=$(date +%s.%N)
  server0=$(cpu_ticks "$PEER_PID")
  client0=$(cpu_ticks "$LOADER_PID" || echo 0)
  sleep "$DURATION"
  kill -0 "$LOADER_PID" 2>/dev/null || alive=0
  calls1=$(zadd_calls)
  t1=$(date +%s.%N)
  server1=$(cpu_ticks "$PEER_PID")
  client1=$(cpu_ticks "$LOADER_PID" || echo 0)
  stop_pid "$LOADER_PID"
  LOADER_PID=""
  if ((alive == 0)) || [[ -z $calls0 || -z $calls1 ]]; then
    echo "redis-benchmark ended before the window did:" >&2
    cat "$log" >&2
    return 1
  fi
  append_row "$extra" "$(jq -cn --argjson c0 "$calls0" --argjson c1 "$calls1" --argjson t0 "$t0" --argjson t1 "$t1" \
    --argjson s0 "$server0" --argjson s1 "$server1" --argjson l0 "$client0" --argjson l1 "$client1" \
    --argjson hz "$CLK_TCK" --argjson conns "$conns" --argjson pipe "$pipe" \
    '{connections: $conns, pipeline: $pipe, ops: ($c1 - $c0), elapsed_s: ($t1 - $t0),
      ops_per_s: (($c1 - $c0) / ($t1 - $t0)), errors: 0,
      server_cpu_us_per_op: (($s1 - $s0) / $hz * 1e6 / ([$c1 - $c0, 1] | max)),
      client_cpu_us_per_op: (($l1 - $l0) / $hz * 1e6 / ([$c1 - $c0, 1] | max))}')"
}

# beanstalk_run EXTRA_JSON CONNECTIONS PIPELINE: bench/beanstalk_put against our beanstalkd (it measures its
# own window after WARMUP, and the server's CPU with --server-pid).
beanstalk_run() {
  local extra=$1 line rc=0
  line=$(timeout 120 "$BEANSTALK_PUT" --target "127.0.0.1:$PEER_PORT" --connections "$2" --pipeline "$3" \
    --warmup "$WARMUP" --duration "$DURATION" --server-pid "$PEER_PID") || rc=$?
  [[ -n $line ]] || { echo "beanstalk_put failed (exit $rc)" >&2; return 1; }
  append_row "$extra" "$(jq -c --argjson rc "$rc" '. + {exit: $rc}' <<<"$line")"
}

# run_one SYSTEM SHAPE REP: one fresh server, one load, stopped again. Returns non-zero if the run failed.
run_one() {
  local system=$1 shape=$2 rep=$3 conns pipe
  local extra="{\"system\":\"$system\",\"shape\":\"$shape\",\"rep\":$rep}"
  if [[ $shape == unary ]]; then conns=64 pipe=1; else conns=16 pipe=100; fi
  case $system in
    floor | lawnd-*)
      if [[ $system == floor ]]; then
        floor_start || return 1
      else
        lawn_start --durability "${system#lawnd-}" --shards 2 || return 1
      fi
      local rc=0
      load_run "$extra" --mode "$shape" --concurrency "$conns" --channels "$CHANNELS" --batch "$pipe" \
        --count $((pipe == 1 ? 10000000 : 100000000)) --duration "$DURATION" --ttl 1h || rc=$?
      lawn_stop
      return $rc
      ;;
    redis-*)
      peer_start "$system" || return 1
      local rc=0
      redis_run "$extra" "$conns" "$pipe" || rc=$?
      peer_stop
      return $rc
      ;;
    beanstalkd-*)
      peer_start "$system" || return 1
      local rc=0
      beanstalk_run "$extra" "$conns" "$pipe" || rc=$?
      peer_stop
      return $rc
      ;;
  esac
}

out_init compare
{
  echo "systems: ${runnable[*]}; shapes: $SHAPES; reps: $REPS; duration: $DURATION; peer warm-up: $WARMUP"
  command -v redis-server >/dev/null && echo "redis: $(redis-server --version)"
  command -v beanstalkd >/dev/null && echo "beanstalkd: $(beanstalkd -v)"
  echo "data dirs on: $(df -P "$LAWN_TMP" | awk 'NR == 2 {print $1 " mounted on " $6}')"
} >>"$OUT/env.txt"
cat "$OUT/env.txt"
started=$SECONDS

for rep in $(seq 1 "$REPS"); do
  for shape in $SHAPES; do
    for system in "${runnable[@]}"; do
      echo "== rep $rep, $shape, $system (load $(cut -d' ' -f1-3 /proc/loadavg))"
      if run_one "$system" "$shape" "$rep" >/dev/null; then
        tail -1 "$OUT/raw.jsonl" | jq -r '"   \(.ops_per_s // .timers_per_s | round) ops/s, server CPU " +
          "\((.server_cpu_us_per_op // .server_cpu_us_per_timer // 0) * 100 | round / 100) us/op"'
      else
        FAILURES+=("$system $shape rep $rep")
      fi
    done
  done
done

echo
{
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - started)) s for ${#runnable[@]} systems x" \
    "$(wc -w <<<"$SHAPES") shapes x $REPS reps"
  ((${#FAILURES[@]} == 0)) || echo "FAILED runs (no row; see the messages above): ${FAILURES[*]}"
} >>"$OUT/env.txt"

/usr/bin/python3 "$LAWN_REPO/bench/scripts/compare_summary.py" "$OUT/raw.jsonl" "$OUT/env.txt" | tee "$OUT/summary.md"
((${#FAILURES[@]} == 0)) || exit 1
