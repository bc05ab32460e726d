#!/usr/bin/env bash
# Builds the lawnd image from the repository's Dockerfile without a Docker engine, then smoke-tests it.
#
#   1. mmdebstrap makes two Debian 12 root filesystems: "bookworm" (minbase, as the official debian:bookworm)
#      and "bookworm-slim" (minbase without docs, man pages and locales, as the official debian:bookworm-slim).
#   2. buildah (chroot isolation, vfs storage, a private storage root under $LAWN_IMAGE_WORKDIR) commits them
#      as docker.io/library/debian:bookworm and :bookworm-slim, so the Dockerfile's FROM lines resolve locally.
#   3. buildah bud builds the Dockerfile (--pull=never). apt-get inside the build uses the base images' apt
#      sources, which are the build host's own (see LAWN_IMAGE_APT_SOURCES below).
#   4. The image's ENTRYPOINT runs, as the image's USER, chrooted into the image's root filesystem on the host
#      network: on 127.0.0.1 with port 0, the chosen port read from its log. The host's lawnctl must see
#      SERVING, start a timer and get it back; SIGTERM to lawnd's PID must drain it to exit 0; a second start
#      on the same data dir must still hold the timer.
#
# Needs root (mmdebstrap, buildah, chroot, mounts); installs mmdebstrap and buildah with apt-get if missing.
# Slow: the image build compiles lawnd (10-20 minutes on 2 cores). Not part of the default CI run; .ci/run
# calls it when LAWN_IMAGE_TEST=1.
#
# Environment (all optional):
#   LAWN_IMAGE_WORKDIR  work and buildah storage folder            (default /var/tmp/lawn-image)
#   LAWN_IMAGE_TAG      name of the built image                     (default localhost/lawn:smoke)
#   LAWN_IMAGE_JOBS     compile jobs inside the build (--build-arg JOBS)        (default 2)
#   LAWN_IMAGE_REBASE   1 = make the two base images again even if present      (default 0)
#   LAWN_IMAGE_APT_SOURCES  apt sources files for the base images, separated by blanks, each in one-line
#                       (sources.list) or deb822 (.sources) format; they must carry Debian 12's bookworm,
#                       bookworm-updates and bookworm-security suites. Default: the build host's own, where apt
#                       reads them (Dir::Etc::SourceList and Dir::Etc::SourceParts: /etc/apt/sources.list and
#                       /etc/apt/sources.list.d/*.list, *.sources), so the image is built from the same package
#                       archive as the host. A Signed-By keyring they name must exist on the host and in the image
#                       (Debian's own, from debian-archive-keyring, is in both).
#   LAWN_IMAGE_APTOPT   an apt option written into both base images (default 'Acquire::Check-Valid-Until
#                       "false";', so a mirror serving an older snapshot still works; "" for none)
#   LAWNCTL             the host's lawnctl (default: build/client/lawnctl or build-main/client/lawnctl)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${LAWN_IMAGE_WORKDIR:-/var/tmp/lawn-image}
tag=${LAWN_IMAGE_TAG:-localhost/lawn:smoke}
jobs=${LAWN_IMAGE_JOBS:-2}
aptopt=${LAWN_IMAGE_APTOPT-Acquire::Check-Valid-Until \"false\";}

log() { printf '[image] %s\n' "$*" >&2; }
die() { printf '[image] FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, buildah, chroot and mounts)"

lawnctl=${LAWNCTL:-}
if [ -z "$lawnctl" ]; then
  for candidate in "$repo/build/client/lawnctl" "$repo/build-main/client/lawnctl"; do
    if [ -x "$candidate" ]; then lawnctl=$candidate; break; fi
  done
fi
if [ -z "$lawnctl" ] || [ ! -x "$lawnctl" ]; then
  die "no host lawnctl: build it (cmake --build build --target lawnctl) or set LAWNCTL=/path/to/lawnctl"
fi

missing=()
command -v mmdebstrap > /dev/null || missing+=(mmdebstrap)
command -v buildah > /dev/null || missing+=(buildah)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p "$work"
bah() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }
export BUILDAH_ISOLATION=chroot

# ---- 1, 2: base images ---------------------------------------------------------------------------------------
# mmdebstrap takes each file as one MIRROR argument and copies it, in its own format, into the image's
# /etc/apt/sources.list.d/. Files holding nothing but comments and blank lines are skipped (apt reads nothing
# from them, and mmdebstrap cannot tell their format).
has_entries() { grep -q -v -E '^[[:space:]]*(#.*)?$' "$1"; }
sources=()
if [ -n "${LAWN_IMAGE_APT_SOURCES:-}" ]; then
  read -r -a requested <<< "$LAWN_IMAGE_APT_SOURCES"
  for f in "${requested[@]}"; do
    [ -f "$f" ] || die "LAWN_IMAGE_APT_SOURCES: no such file: $f"
    has_entries "$f" || die "LAWN_IMAGE_APT_SOURCES: $f has no apt source entry"
    sources+=("$f")
  done
else
  source_list=/etc/apt/sources.list
  source_parts=/etc/apt/sources.list.d/
  if command -v apt-config > /dev/null; then
    eval "$(apt-config shell source_list Dir::Etc::SourceList/f source_parts Dir::Etc::SourceParts/d)"
  fi
  for f in "$source_list" "${source_parts%/}"/*.list "${source_parts%/}"/*.sources; do
    if [ -f "$f" ] && has_entries "$f"; then sources+=("$f"); fi
  done
  [ ${#sources[@]} -gt 0 ] ||
    die "no apt sources in $source_list or ${source_parts%/}/*.list, *.sources; set LAWN_IMAGE_APT_SOURCES"
fi
grep -q -w -E 'bookworm' "${sources[@]}" ||
  die "the apt sources (${sources[*]}) name no bookworm suite; the images are Debian 12: set LAWN_IMAGE_APT_SOURCES"
log "base image apt sources: ${sources[*]}"
aptopts=()
[ -z "$aptopt" ] || aptopts=(--aptopt="$aptopt")
# What debuerreotype's slimify leaves out of the official -slim images.
slim_excludes=(
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/linda/*' --dpkgopt='path-exclude=/usr/share/lintian/overrides/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/man/*'
)

make_base() {  # make_base NAME [mmdebstrap options...]
  local name=$1
  shift
  local ref=docker.io/library/debian:$name
  if [ "${LAWN_IMAGE_REBASE:-0}" != 1 ] && bah inspect --type image "$ref" > /dev/null 2>&1; then
    log "base image $ref already present"
    return
  fi
  log "mmdebstrap $name"
  rm -f "$work/$name.tar"
  mmdebstrap --mode=root --variant=minbase "${aptopts[@]}" "$@" bookworm "$work/$name.tar" "${sources[@]}"
  local ctr mnt
  ctr=$(bah from --name "lawn-base-$name" scratch)
  mnt=$(bah mount "$ctr")
  tar -C "$mnt" --numeric-owner -xpf "$work/$name.tar"
  bah umount "$ctr" > /dev/null
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --os linux --arch amd64 "$ctr"
  bah commit --rm "$ctr" "$ref" > /dev/null
  rm -f "$work/$name.tar"
  log "committed $ref"
}
make_base bookworm
make_base bookworm-slim "${slim_excludes[@]}"

# ---- 3: the image ---------------------------------------------------------------------------------------------
log "buildah bud $repo/Dockerfile -> $tag (compiles lawnd; slow)"
build_start=$(date +%s)
bah bud --isolation chroot --pull=never --layers --build-arg JOBS="$jobs" -t "$tag" -f "$repo/Dockerfile" "$repo"
log "image built in $(( $(date +%s) - build_start )) s"

inspect_json=$(bah inspect --type image "$tag")
entrypoint=()
user=""
stop_signal=""
{
  IFS= read -r user
  IFS= read -r stop_signal
  while IFS= read -r word; do entrypoint+=("$word"); done
} < <(python3 -c '
import json, sys
c = json.loads(sys.argv[1])["OCIv1"]["config"]
print(c.get("User", ""))
print(c.get("StopSignal", ""))
for w in c.get("Entrypoint") or []:
    print(w)
' "$inspect_json")
log "image config: User=$user StopSignal=$stop_signal Entrypoint=${entrypoint[*]}"
case "${user%%:*}" in
  "" | 0 | root) die "image runs as root (User='$user')" ;;
esac
[ "$stop_signal" = SIGTERM ] || die "image StopSignal is '$stop_signal', want SIGTERM"
[ ${#entrypoint[@]} -gt 0 ] || die "image has no ENTRYPOINT"

# ---- 4: run the image's entrypoint and talk to it with the host's lawnctl -------------------------------------
ctr=$(bah from --name "lawn-smoke-$$" "$tag")
mnt=$(bah mount "$ctr")
lawnd_pid=""
cleanup() {
  if [ -n "$lawnd_pid" ] && kill -0 "$lawnd_pid" 2> /dev/null; then kill -KILL "$lawnd_pid" 2> /dev/null || true; fi
  bah umount "$ctr" > /dev/null 2>&1 || true
  bah rm "$ctr" > /dev/null 2>&1 || true
}
trap cleanup EXIT
size=$(du -sh "$mnt" | cut -f1)
log "image root filesystem: $size"
if [ -e "$mnt/usr/bin/g++" ] || [ -e "$mnt/usr/bin/cmake" ]; then die "the runtime image contains a compiler"; fi

run_log=$work/lawnd.log
# Starts the entrypoint (plus loopback/port-0 overrides) chrooted as the image's user, in a private mount
# namespace holding /dev and /proc; unshare and chroot exec, so $! is lawnd's own PID.
start_lawnd() {
  : > "$run_log"
  # shellcheck disable=SC2016  # $1, $mnt and $user expand in the inner sh.
  unshare --mount --propagation private -- sh -c '
    mnt=$1; shift; user=$1; shift
    mount --rbind /dev "$mnt/dev" && mount -t proc proc "$mnt/proc" || exit 97
    exec chroot --userspec="$user" "$mnt" "$@"' \
    sh "$mnt" "$user" "${entrypoint[@]}" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    > "$run_log" 2>&1 &
  lawnd_pid=$!
  port=""
  for _ in $(seq 1 300); do  # 30 s for the "listening" line
    port=$(sed -n 's/.*lawnd listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$run_log" | head -n1)
    [ -z "$port" ] || break
    kill -0 "$lawnd_pid" 2> /dev/null || { cat "$run_log" >&2; die "lawnd exited at start"; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$run_log" >&2; die "lawnd did not log its port within 30 s"; }
  for _ in $(seq 1 300); do  # 30 s for recovery: SERVING
    if "$lawnctl" --addr "127.0.0.1:$port" --timeout 2s health > /dev/null 2>&1; then break; fi
    sleep 0.1
  done
  local health
  health=$("$lawnctl" --addr "127.0.0.1:$port" --timeout 2s health) || true
  [ "$health" = SERVING ] || { cat "$run_log" >&2; die "health is '$health', want SERVING"; }
  "$lawnctl" --addr "127.0.0.1:$port" health --service liveness > /dev/null || die "liveness is not SERVING"
  log "lawnd (pid $lawnd_pid) SERVING on 127.0.0.1:$port"
}
stop_lawnd() {
  kill -TERM "$lawnd_pid"
  local status=0
  wait "$lawnd_pid" || status=$?
  lawnd_pid=""
  [ "$status" -eq 0 ] || { cat "$run_log" >&2; die "lawnd exited $status after SIGTERM, want 0"; }
  log "lawnd drained and exited 0 after SIGTERM"
}

start_lawnd
metrics_port=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$run_log" | head -n1)
if [ -n "$metrics_port" ] && command -v curl > /dev/null; then
  # Into a file first: grep -q stops reading at its first match, and curl, still writing a large page, would
  # fail the pipe (exit 23).
  curl -fsS "http://127.0.0.1:$metrics_port/metrics" > "$work/metrics.txt" || die "/metrics did not answer"
  grep -q '^lawn_' "$work/metrics.txt" || die "/metrics has no lawn_ metric"
  log "/metrics answers on 127.0.0.1:$metrics_port"
fi
"$lawnctl" --addr "127.0.0.1:$port" start smoke-1 -n smoke --ttl 1h --payload hello > /dev/null
"$lawnctl" --addr "127.0.0.1:$port" get smoke-1 -n smoke | tee "$work/get1.txt" >&2
grep -q smoke-1 "$work/get1.txt" || die "get smoke-1 did not show the timer"
grep -q '^{' "$run_log" || die "lawnd's log is not JSON lines (log_format json in the image config)"
stop_lawnd

# lawn_dump, as the image's user, reads the stopped lawnd's data dir.
# shellcheck disable=SC2016  # $1, $mnt and $user expand in the inner sh.
unshare --mount --propagation private -- sh -c '
  mnt=$1; shift; user=$1; shift
  mount --rbind /dev "$mnt/dev" && mount -t proc proc "$mnt/proc" || exit 97
  exec chroot --userspec="$user" "$mnt" "$@"' \
  sh "$mnt" "$user" /usr/local/bin/lawn_dump /var/lib/lawn > "$work/dump.txt" 2> "$work/dump.err" \
  || { cat "$work/dump.err" >&2; die "lawn_dump failed on the data dir"; }
grep -q "\"id\":\"$(printf smoke-1 | base64)\"" "$work/dump.txt" || die "lawn_dump did not print smoke-1"
log "lawn_dump printed smoke-1 from the data dir"

# The data dir is the image's /var/lib/lawn: a second start recovers the timer from RocksDB.
start_lawnd
"$lawnctl" --addr "127.0.0.1:$port" get smoke-1 -n smoke > /dev/null || die "smoke-1 lost across a restart"
log "smoke-1 recovered after a restart"
stop_lawnd

log "PASS: $tag built from the Dockerfile and served timers"
