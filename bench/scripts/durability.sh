#!/usr/bin/env bash
# StartTimers throughput per durability mode (NETWORK_RESULTS.md section c): batches of 100, 1 / 16 / 64
# clients (one connection and one call in flight each), memory as the baseline of every ratio, fresh lawnd
# per run; see throughput.sh for the loop and the environment it reads. About 3 min with the defaults.
#
#   bench/scripts/durability.sh
export MODES=${MODES:-batch}
export DURABILITIES=${DURABILITIES:-memory interval sync}
export CHANNELS=${CHANNELS:-per-call}
exec "$(dirname "${BASH_SOURCE[0]}")/throughput.sh"
