#!/usr/bin/env bash
# Runs lawn's libFuzzer targets for a bounded time each, every one on a scratch copy of its committed seed
# corpus (tests/fuzz/corpus/<target>/, never modified), and fails if any of them crashes: a sanitizer report,
# a FUZZ_CHECK invariant, an uncaught exception, a leak, an input slower than 25 s, more than 2 GiB of RSS.
#
# Usage: tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]
#   BUILD_DIR: a build configured with -DLAWN_FUZZ=ON (clang), e.g.
#     CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DLAWN_FUZZ=ON -DLAWN_BUILD_TESTS=OFF -DLAWN_BUILD_BENCH=OFF
#     cmake --build build-fuzz -j2 --target lawn_fuzzers
#   TARGET: default all five (start_timer_fuzz record_coding_fuzz config_fuzz outbox_fuzz round_log_fuzz).
# Environment: LAWN_FUZZ_JOBS (default 2) targets run at once. LAWN_FUZZ_WORK=DIR keeps the run's corpora,
# logs and crash inputs there (default: a temp dir, removed when every target passed, kept and printed
# otherwise).
# A crash input is reproduced with `BUILD_DIR/tests/fuzz/TARGET FILE`; once fixed, commit it into the target's
# corpus folder so the ctest case fuzz.TARGET.corpus replays it from then on.
set -euo pipefail

if [ $# -lt 2 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
fi
build_dir=$1
seconds=$2
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(start_timer_fuzz record_coding_fuzz config_fuzz outbox_fuzz round_log_fuzz)
case "$seconds" in ''|*[!0-9]*) echo "run_fuzzers.sh: SECONDS_PER_TARGET must be a whole number" >&2; exit 2 ;; esac
parallel=${LAWN_FUZZ_JOBS:-2}
case "$parallel" in ''|*[!0-9]*|0) echo "run_fuzzers.sh: LAWN_FUZZ_JOBS must be a whole number of at least 1" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")" && pwd)
work=${LAWN_FUZZ_WORK:-$(mktemp -d /tmp/lawn-fuzz.XXXXXX)}
mkdir -p "$work"

# Fuzzes one target; its verdict goes to $work/$1.result, a first line "TARGET: ok ..." or "TARGET: FAILED ...".
# Always returns 0: the verdict is in the file (a missing file is a failure).
run_one() {
  local t=$1
  local bin="$build_dir/tests/fuzz/$t"
  local dir="$work/$t"
  if [ ! -x "$bin" ]; then
    echo "$t: FAILED: no binary $bin (configure with -DLAWN_FUZZ=ON and build the target lawn_fuzzers)" > "$work/$t.result"
    return
  fi
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  cp -R "$here/corpus/$t/." "$dir/corpus/"
  local start status=0 elapsed stats cov
  start=$(date +%s)
  # A fixed seed by default (LAWN_FUZZ_SEED overrides): a CI run explores the same inputs in the same order.
  "$bin" -seed="${LAWN_FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "$dir/corpus" > "$dir/log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  stats=$(grep -E '^stat::(number_of_executed_units|new_units_added)' "$dir/log" | awk '{printf "%s %s  ", $1, $2}' |
          sed 's/stat:://g' || true)
  cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -1 || true)
  {
    if [ "$status" -eq 0 ]; then
      echo "$t: ok in ${elapsed}s: ${stats}${cov}"
    else
      echo "$t: FAILED (exit $status) after ${elapsed}s; log $dir/log; end of log:"
      tail -n 40 "$dir/log" | sed 's/^/    /'
      for a in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* "$dir"/slow-unit-*; do
        if [ -e "$a" ]; then echo "    input: $a (reproduce: $bin $a)"; fi
      done
    fi
  } > "$work/$t.result"
  return 0
}

# LAWN_FUZZ_JOBS targets at a time (default 2, this machine's cores): each still fuzzes for SECONDS_PER_TARGET.
# No fuzzer outlives the script (an interrupted run, or an error in it).
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  rm -f "$work/$t.result"  # A verdict left in a reused LAWN_FUZZ_WORK must not count.
  run_one "$t" &
  running=$((running + 1))
done
wait

passed=0
failed=0
for t in "${targets[@]}"; do
  [ -f "$work/$t.result" ] || echo "$t: FAILED: its run ended without a verdict" > "$work/$t.result"
  cat "$work/$t.result"
  if [ "$(head -1 "$work/$t.result" | cut -d' ' -f2)" = "ok" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done

if [ "$failed" -eq 0 ] && [ -z "${LAWN_FUZZ_WORK:-}" ]; then
  rm -rf "$work"
else
  echo "fuzz work dir kept: $work"
fi
echo "fuzzers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
