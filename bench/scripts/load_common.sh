# shellcheck shell=bash
# Shared helpers of the networked benchmark scripts (sourced, not run): start and stop lawnd by PID, run
# lawn_load, keep raw results. Every wait is bounded; an EXIT trap stops the lawnd this shell started and
# removes its data directory.
#
# Environment:
#   LAWN_BUILD   build directory holding server/lawnd and bench/lawn_load (default build-bench/ in the
#                repository; build with: cmake --build "$LAWN_BUILD" --target lawnd lawn_load)
#   LAWN_LOAD_BIN  the load program under bench/ that load_run runs (default lawn_load; set by the script
#                before sourcing, e.g. batcher.sh's lawn_batcher_load)
#   LAWN_TMP     where data directories and logs go (default $LAWN_BUILD/lawn-net)
#   OUT          where the raw JSON lines and the summary go (default $LAWN_TMP/<script>-<time>)

set -euo pipefail

LAWN_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LAWN_BUILD=${LAWN_BUILD:-$LAWN_REPO/build-bench}
LAWND=$LAWN_BUILD/server/lawnd
LAWN_LOAD=$LAWN_BUILD/bench/${LAWN_LOAD_BIN:-lawn_load}
LAWN_TMP=${LAWN_TMP:-$LAWN_BUILD/lawn-net}
mkdir -p "$LAWN_TMP"
for bin in "$LAWND" "$LAWN_LOAD"; do
  [[ -x $bin ]] || {
    echo "missing $bin; build it: cmake --build $LAWN_BUILD --target lawnd ${LAWN_LOAD_BIN:-lawn_load}" >&2
    exit 2
  }
done

LAWN_PID=""
LAWN_DIR=""
LAWN_LOG=""
LAWN_PORT=""

# lawn_start [lawnd flags...]: starts lawnd on a free loopback port with a fresh data directory (or
# LAWN_REUSE_DIR if set), waits (at most LAWN_START_TIMEOUT s, default 600) for `listening on` and
# `recovery done`; sets LAWN_PID, LAWN_PORT, LAWN_DIR, LAWN_LOG and LAWN_READY_S (seconds from start to
# both lines, read by recovery.sh).
lawn_start() {
  if [[ -n ${LAWN_REUSE_DIR:-} ]]; then
    LAWN_DIR=$LAWN_REUSE_DIR
  else
    LAWN_DIR=$(mktemp -d "$LAWN_TMP/data.XXXXXX")
  fi
  LAWN_LOG=$(mktemp "$LAWN_TMP/lawnd.XXXXXX.log")
  local t0 t1
  t0=$(date +%s.%N)
  "$LAWND" --listen 127.0.0.1:0 --data-dir "$LAWN_DIR" --metrics-listen "" "$@" >"$LAWN_LOG" 2>&1 &
  LAWN_PID=$!
  local limit=$((SECONDS + ${LAWN_START_TIMEOUT:-600}))
  until grep -q 'recovery done' "$LAWN_LOG" && grep -q 'listening on' "$LAWN_LOG"; do
    if ! kill -0 "$LAWN_PID" 2>/dev/null || ((SECONDS > limit)); then
      echo "lawnd did not start:" >&2
      cat "$LAWN_LOG" >&2
      lawn_stop
      return 1
    fi
    sleep 0.05
  done
  t1=$(date +%s.%N)
  # shellcheck disable=SC2034  # Read by the scripts that source this file.
  LAWN_READY_S=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
  LAWN_PORT=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$LAWN_LOG" | head -1 | sed 's/.*://')
}

# lawn_rss_kib: VmRSS of the running lawnd, in KiB.
lawn_rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$LAWN_PID/status"; }

# lawn_stop: SIGTERM to our lawnd (by PID), waits for it to exit (SIGKILL after 60 s), removes its data
# directory (unless it is LAWN_REUSE_DIR) and its log (kept, and named, if lawnd did not exit with 0). Sets
# LAWN_EXIT to its exit status.
lawn_stop() {
  LAWN_EXIT=0
  if [[ -n $LAWN_PID ]]; then
    kill -TERM "$LAWN_PID" 2>/dev/null || true
    local limit=$((SECONDS + 60))
    while kill -0 "$LAWN_PID" 2>/dev/null && ((SECONDS < limit)); do sleep 0.05; done
    kill -0 "$LAWN_PID" 2>/dev/null && kill -KILL "$LAWN_PID" 2>/dev/null
    wait "$LAWN_PID" || LAWN_EXIT=$?
    ((LAWN_EXIT == 0)) || echo "lawnd $LAWN_PID exited with $LAWN_EXIT (log kept: $LAWN_LOG)" >&2
    LAWN_PID=""
  fi
  if [[ -n $LAWN_DIR && -z ${LAWN_REUSE_DIR:-} ]]; then
    rm -rf "$LAWN_DIR"
    LAWN_DIR=""
  fi
  if [[ -n $LAWN_LOG ]] && ((LAWN_EXIT == 0)); then
    rm -f "$LAWN_LOG"
  fi
  LAWN_LOG=""
  return 0
}

lawn_cleanup() {
  lawn_stop
  [[ -n ${LAWN_REUSE_DIR:-} ]] && rm -rf "$LAWN_REUSE_DIR"
  return 0
}
trap lawn_cleanup EXIT
trap 'exit 130' INT TERM

# load_run EXTRA_JSON lawn_load-flags...: runs lawn_load --json against our lawnd (with --server-pid) and
# appends its JSON object, merged with the JSON object EXTRA_JSON (e.g. '{"durability":"sync","rep":1}'), as
# one line to $OUT/raw.jsonl; also echoes it.
load_run() {
  local extra=$1
  shift
  local line rc=0
  line=$("$LAWN_LOAD" --target "127.0.0.1:$LAWN_PORT" --server-pid "$LAWN_PID" --json "$@") || rc=$?
  if [[ -z $line ]]; then
    echo "lawn_load failed (exit $rc): $*" >&2
    return 1
  fi
  line=$(jq -c --argjson extra "$extra" --argjson rc "$rc" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
    '. + $extra + {exit: $rc, loadavg_1m: ($load | tonumber)}' <<<"$line")
  echo "$line" >>"$OUT/raw.jsonl"
  echo "$line"
}

# out_init NAME: creates $OUT and records the machine and the commit.
out_init() {
  OUT=${OUT:-$LAWN_TMP/$1-$(date +%Y%m%d-%H%M%S)}
  mkdir -p "$OUT"
  : >"$OUT/raw.jsonl"
  {
    echo "date: $(date -Is)"
    echo "host: $(nproc) cores, $(awk '/MemTotal/ {print $2 " KiB"}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
    local repo
    repo=$(dirname "${BASH_SOURCE[0]}")
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
      "(uncommitted: $(git -C "$repo" status --short -- ../../core ../../server ../../storage ../../config ../../proto \
        2>/dev/null | tr '\n' ' '))"
    echo "lawnd: $LAWND (built $(date -r "$LAWND" -Is))"
  } >"$OUT/env.txt"
  echo "results in $OUT"
}
