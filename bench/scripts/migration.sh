#!/usr/bin/env bash
# The one-time migrations of a data dir (storage/FORMAT.md): a lawnd of the old format writes COUNT timers
# (TTL 1h, batches of 1000) and stops; this build's lawnd opens the same data dir, migrates it and recovers;
# then it restarts once more (nothing to migrate). Prints the seconds from start to the migration's log line
# and to `recovery done`, for both starts, and the data dir's size.
#
#   LAWND_OLD=<lawnd before 2026-11-27, e.g. built at 3e6fdc9> LAWN_BUILD=$PWD/build bench/scripts/migration.sh
#   TO=3 LAWN_BUILD=$PWD/build bench/scripts/migration.sh
#   FROM=3 TO=2 LAWN_BUILD=$PWD/build bench/scripts/migration.sh
#
# TO=2 (the default): format version 1 (LAWND_OLD) to 2. TO=3: format 2 (this build with
# --storage-engine rocksdb) to 3 (--storage-engine log), which keeps the old store in format2-backup.
# FROM=3 TO=2: format 3 (this build, --storage-engine log) back to 2 (--storage-engine rocksdb), which keeps
# the old store in format3-backup.
# Environment (defaults): TO (2), FROM (TO - 1), LAWND_OLD (required for version 1), COUNT (1000000), plus
# those of load_common.sh.
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

TO=${TO:-2}
FROM=${FROM:-$((TO - 1))}
if [[ $TO == 3 ]]; then
  LAWND_OLD=$LAWND OLD_ARGS=(--storage-engine rocksdb) NEW_ARGS=(--storage-engine log)
elif [[ $FROM == 3 ]]; then
  LAWND_OLD=$LAWND OLD_ARGS=(--storage-engine log) NEW_ARGS=(--storage-engine rocksdb)
else
  [[ -x ${LAWND_OLD:-} ]] || { echo "set LAWND_OLD to a lawnd of storage format version 1" >&2; exit 2; }
  OLD_ARGS=() NEW_ARGS=()
fi
COUNT=${COUNT:-1000000}
NEW_LAWND=$LAWND
LAWN_REUSE_DIR=$(mktemp -d "$LAWN_TMP/migration.XXXXXX")

# Seconds from the log's first line to the first line matching $2.
since_start() {
  python3 - "$1" "$2" <<'PY'
import re, sys
from datetime import datetime
lines = open(sys.argv[1]).read().splitlines()
stamp = lambda l: datetime.strptime(l[:23], "%Y-%m-%dT%H:%M:%S.%f")
hit = next((l for l in lines if sys.argv[2] in l), None)
print(f"{(stamp(hit) - stamp(lines[0])).total_seconds():.3f}" if hit else "-")
PY
}

LAWND=$LAWND_OLD
lawn_start --durability interval --shards 2 "${OLD_ARGS[@]}"
"$LAWN_LOAD" --target "127.0.0.1:$LAWN_PORT" --mode batch --batch 1000 --concurrency 8 --count "$COUNT" \
  --ttl 1h >/dev/null
lawn_stop
echo "format $FROM data dir: $(du -sh "$LAWN_REUSE_DIR" | cut -f1), $COUNT timers (load 1m: $(cut -d' ' -f1 /proc/loadavg))"

LAWND=$NEW_LAWND
for start in migrating again; do
  lawn_start --durability interval --shards 2 "${NEW_ARGS[@]}"
  log=$LAWN_TMP/migration-$start.log
  cp "$LAWN_LOG" "$log"
  echo "$start: migrated line $(since_start "$log" 'migrated to') s, recovery done $(since_start "$log" 'recovery done') s:" \
    "$(grep -o 'recovery done: [0-9]* timers' "$log")"
  lawn_stop
done
echo "data dir after: $(du -sh "$LAWN_REUSE_DIR" | cut -f1)"
