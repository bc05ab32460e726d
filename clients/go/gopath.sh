#!/usr/bin/env bash
# Makes a GOPATH in which the Go client builds offline against Debian's Go packages, and prints the
# environment to use it:
#
#   eval "$(clients/go/gopath.sh /tmp/lawn-go)"     # then: go run examples/go/quickstart/main.go
#
# Debian packages Go libraries as GOPATH sources (/usr/share/gocode/src), without the module metadata that
# an offline module build would need, so the client is built in GOPATH mode (GO111MODULE=off):
#   <dir>/src/lawn.dev/lawn            -> clients/go/lawn (a symlink: edits show at once)
#   <dir>/src/lawn.dev/proto/lawn/v1   stubs generated from proto/ by protoc with protoc-gen-go (built here from
#                                      golang-google-protobuf-dev's source, v1.28) and Debian's protoc-gen-go-grpc
# The stubs are regenerated whenever proto/ or the generators are newer than them, so they never drift from
# the proto. Needs: golang-go golang-google-grpc-dev golang-google-protobuf-dev protoc-gen-go-grpc
# protobuf-compiler (.ci/install-deps installs them).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 GOPATH_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
# Go's build cache: the user's (shared by every build dir, so gRPC is compiled once per machine, not once per
# build dir and sanitizer step), or one in DIR when there is no home to keep it in.
if [ -z "${GOCACHE:-}" ]; then
  if [ -n "${XDG_CACHE_HOME:-}" ] || [ -n "${HOME:-}" ]; then
    GOCACHE=${XDG_CACHE_HOME:-$HOME/.cache}/go-build
  else
    GOCACHE=$dir/cache
  fi
fi
export GO111MODULE=off GOFLAGS= GOPATH="$dir:/usr/share/gocode" GOCACHE

mkdir -p "$dir/src/lawn.dev" "$dir/bin"
# One maker at a time per GOPATH (a build and a test may run this at once).
exec 9>"$dir/.lock"
flock 9
for tool in go protoc protoc-gen-go-grpc; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found (.ci/install-deps installs it)" >&2; exit 1; }
done
ln -sfn "$here/lawn" "$dir/src/lawn.dev/lawn"

gen_go="$dir/bin/protoc-gen-go"
if [ ! -x "$gen_go" ]; then
  go build -o "$gen_go.tmp" google.golang.org/protobuf/cmd/protoc-gen-go
  mv "$gen_go.tmp" "$gen_go"
fi
gen_grpc=$(command -v protoc-gen-go-grpc)

stubs="$dir/src/lawn.dev/proto/lawn/v1"
stamp="$stubs/timer.pb.go"
proto="$root/proto/lawn/v1/timer.proto"
if [ ! -f "$stamp" ] || [ "$proto" -nt "$stamp" ] || [ "$gen_go" -nt "$stamp" ] || [ "$gen_grpc" -nt "$stamp" ]; then
  out=$(mktemp -d "$dir/stubs.XXXXXX")
  map=Mlawn/v1/timer.proto=lawn.dev/proto/lawn/v1
  protoc -I "$root/proto" --plugin=protoc-gen-go="$gen_go" --plugin=protoc-gen-go-grpc="$gen_grpc" \
    --go_out="$out" --go_opt="$map" --go-grpc_out="$out" --go-grpc_opt="$map" lawn/v1/timer.proto
  mkdir -p "$(dirname "$stubs")"
  rm -rf "$stubs"
  mv "$out/lawn.dev/proto/lawn/v1" "$stubs"
  rm -rf "$out"
fi

printf 'export GO111MODULE=off GOFLAGS= GOPATH=%q GOCACHE=%q\n' "$GOPATH" "$GOCACHE"
