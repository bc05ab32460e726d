#!/usr/bin/env bash
# Runs the Go client's tests against a real lawnd: gofmt and go vet over the client and examples/go, then
# `go test` of lawn.dev/lawn, whose tests start lawnd ($LAWND) themselves.
#   usage: LAWND=build/server/lawnd LAWN_MAKE_CERTS=tests/testing/make_certs.sh LAWN_SOURCE_DIR=. \
#          clients/go/run_tests.sh GOPATH_DIR [go test flags, e.g. -run TestExamples]
# GOPATH_DIR is made by gopath.sh (the build does it: target lawn_go_client); made here if missing.
#   clients/go/run_tests.sh --build-only GOPATH_DIR   makes the GOPATH and builds the package, nothing else
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
eval "$("$here/gopath.sh" "$1")"
shift
if [ "$build_only" -eq 1 ]; then
  exec go build lawn.dev/lawn
fi
unformatted=$(gofmt -l "$here" "$root/examples/go")
if [ -n "$unformatted" ]; then
  echo "not gofmt-formatted: $unformatted" >&2
  exit 1
fi
go vet lawn.dev/lawn
for main in "$root"/examples/go/*/main.go; do
  go vet "$main"
done
# -race: the subscription is goroutines sharing state; the race detector checks every run.
exec go test -race -count=1 -v -timeout 900s "$@" lawn.dev/lawn
