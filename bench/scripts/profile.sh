#!/usr/bin/env bash
# Where lawnd's CPU time goes under load: `perf record` (software cpu-clock event, which works without
# hardware counters) on lawnd during a lawn_load run, then the samples grouped by category (allocation,
# protobuf, gRPC, engine, the log engine's store, RocksDB, kernel, ...) and the top symbols. Bounded: DURATION plus ~5 s per case.
#
#   bench/scripts/profile.sh                               # batch/memory, batch/sync, unary/memory at 16 in flight
#   CASES="batch:sync:64" DURATION=8s bench/scripts/profile.sh
#
# Environment (defaults): CASES ("batch:memory:16 batch:sync:16 unary:memory:16", each mode:durability:in
# flight), DURATION (5s), HZ (999), SHARDS (2), ENGINE (auto: the log engine, lawnd's default for a new data
# dir; rocksdb for format 2), plus those of load_common.sh. lawnd is a Release build without
# frame pointers, so the grouping uses self time per symbol (no call graph). Writes $OUT/<case>.perf.data,
# $OUT/<case>.txt (the report) and $OUT/summary.md.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"
command -v perf >/dev/null || { echo "perf not found" >&2; exit 2; }

CASES=${CASES:-batch:memory:16 batch:sync:16 unary:memory:16}
DURATION=${DURATION:-5s}
HZ=${HZ:-999}
SHARDS=${SHARDS:-2}
ENGINE=${ENGINE:-auto}
out_init profile
: >"$OUT/summary.md"

seconds=${DURATION%s}
for case in $CASES; do
  IFS=: read -r mode durability conc <<<"$case"
  name="$mode-$durability-$conc"
  lawn_start --durability "$durability" --storage-engine "$ENGINE" --shards "$SHARDS"
  perf record -e cpu-clock -F "$HZ" -o "$OUT/$name.perf.data" -p "$LAWN_PID" -- sleep "$seconds" 2>/dev/null &
  perf_pid=$!
  load_run "{\"durability\":\"$durability\",\"case\":\"$name\"}" --mode "$mode" --concurrency "$conc" \
    --count 8000000 --duration "$DURATION" --ttl 1h >"$OUT/$name.load.json"
  wait "$perf_pid" || true
  lawn_stop
  perf report -i "$OUT/$name.perf.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null >"$OUT/$name.txt"
  python3 - "$OUT/$name.txt" "$name" "$OUT/$name.load.json" >>"$OUT/summary.md" <<'EOF'
import json, re, sys
from collections import defaultdict
path, name, load = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
rows = []
for line in open(path):
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if m:
        rows.append((float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()))
def category(dso, kind, sym):
    if kind == "k" or dso.startswith("[kernel"):
        return "kernel (syscalls, scheduling, TCP)"
    if re.search(r"(^|[^a-z])(_int_malloc|_int_free|malloc|cfree|free|calloc|realloc|malloc_consolidate|unlink_chunk"
                 r"|operator new|operator delete|tcache|arena_get)", sym):
        return "allocation (malloc/free)"
    if re.search(r"lawn::(logstore::|LogTimerStore|RoundLog|StoreBatch|SnapshotWriter|internal::.*Crc32c)", sym):
        return "storage: lawn's records and the log engine (encode, CRC, fold)"
    if "rocksdb" in dso or "rocksdb::" in sym or "snappy" in dso or "zstd" in dso or "lz4" in dso:
        return "RocksDB (+compression)"
    if "protobuf" in dso or "google::protobuf" in sym or "lawn::v1::" in sym:
        return "protobuf (parse, serialize, message objects)"
    if "grpc" in dso or "gpr" in dso or sym.startswith("grpc") or "grpc_" in sym:
        return "gRPC"
    if re.search(r"lawn::(Shard::|Lawn|TimingWheel|TimerPool|TtlRouter)|raw_hash_set|absl.*hash", sym):
        return "engine (core: shard, lawn, wheel, id map)"
    if "lawn::" in sym or dso == "lawnd":
        return "server glue (service, validation, commands, outbox)"
    if "absl" in dso:
        return "abseil (mutex, status, ...)"
    if dso.startswith("libc") or dso.startswith("libstdc++") or dso.startswith("ld-linux"):
        return "libc/libstdc++ other (memcpy, hashing, locks)"
    return "other"
cats = defaultdict(float)
for pct, dso, kind, sym in rows:
    cats[category(dso, kind, sym)] += pct
print(f"### {name}: {load['timers_per_s']:,.0f} timers/s, lawnd {load.get('server_cpu_us_per_timer', 0):.2f} CPU us/timer\n")
print("| category | % of lawnd samples |\n|---|---|")
for c, p in sorted(cats.items(), key=lambda kv: -kv[1]):
    print(f"| {c} | {p:.1f} |")
print("\nTop symbols (self %):\n")
for pct, dso, kind, sym in rows[:15]:
    print(f"- {pct:.1f}% {sym[:110]} ({dso})")
print()
EOF
done
cat "$OUT/env.txt" "$OUT/summary.md"
