#!/usr/bin/env bash
# CPU time of the log engine's fold per logged operation (bench/log_fold.cc), for one or more lawn_log_fold
# binaries in one window: each round runs every binary on each workload, in an order rotated from round to
# round; prints per binary and workload the median of us/op and of its ratio to the first binary in the
# same round. Bounded: FOLDS folds of LOG_MIB each per run (about 1-4 s of CPU each).
#
#   bench/scripts/fold.sh /tmp/lawn_log_fold-before build/bench/lawn_log_fold
#
# Environment (defaults): REPS (3), FOLDS (3), LOG_MIB (128), WORKLOADS ("starts cycle"), DIR (/tmp: where the
# snapshots are written, then deleted).
set -euo pipefail
(($# > 0)) || { echo "usage: $0 LAWN_LOG_FOLD..." >&2; exit 2; }
REPS=${REPS:-3}
FOLDS=${FOLDS:-3}
LOG_MIB=${LOG_MIB:-128}
WORKLOADS=${WORKLOADS:-starts cycle}
DIR=${DIR:-/tmp}
BINS=("$@")
raw=$(mktemp /tmp/lawn-fold.XXXXXX)
echo "date: $(date -Is)  load: $(cut -d' ' -f1-3 /proc/loadavg)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
n=${#BINS[@]}
for rep in $(seq 1 "$REPS"); do
  for w in $WORKLOADS; do
    for k in $(seq 0 $((n - 1))); do
      i=$(((k + rep) % n))
      us=$("${BINS[$i]}" "$FOLDS" "$LOG_MIB" "$w" "$DIR" | tail -1 | sed 's/.*us_per_log_op=//')
      echo "$rep $w $i $us" >>"$raw"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$raw" "${BINS[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bins = sys.argv[2:]
print("| binary | workload | us per logged op (median) | / first binary (median of per-round ratios) |")
print("|---|---|---|---|")
for w in dict.fromkeys(r[1] for r in rows):
    cell = {(r[0], int(r[2])): float(r[3]) for r in rows if r[1] == w}
    reps = sorted({r[0] for r in rows if r[1] == w})
    for i, b in enumerate(bins):
        us = statistics.median(cell[(rep, i)] for rep in reps)
        ratio = statistics.median(cell[(rep, i)] / cell[(rep, 0)] for rep in reps)
        print(f"| {b} | {w} | {us:.3f} | {ratio:.2f} |")
PY
rm -f "$raw"
