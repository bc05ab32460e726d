#!/usr/bin/env bash
# What security costs on the call path, in one window: StartTimer (unary, 64 in flight) and StartTimers
# (batches of 100, 16 in flight) against a Release lawnd (memory durability, 2 shards) in three setups,
# alternating run by run for REPS rounds: `plain` (no TLS, no tokens), `token` (auth.tokens_file, every call
# with a bearer token) and `tls+token` (TLS on top). Prints medians, ratios to `plain` and CPU us per timer
# (lawnd's and lawn_load's).
#
#   bench/scripts/security_cost.sh
#
# Environment (defaults): REPS (3), DURATION (4s), plus those of load_common.sh (LAWN_BUILD).
source "$(dirname "${BASH_SOURCE[0]}")/load_common.sh"

REPS=${REPS:-3}
DURATION=${DURATION:-4s}
out_init security_cost

certs=$(mktemp -d "$LAWN_TMP/certs.XXXXXX")
"$LAWN_REPO/tests/testing/make_certs.sh" "$certs"
token=bench-token-0123456789
printf 'tokens:\n  - name: bench\n    sha256: %s\n    grants:\n      - namespaces: ["*"]\n        permissions: [start]\n' \
  "$(printf %s "$token" | sha256sum | cut -d' ' -f1)" >"$certs/tokens.yaml"

for rep in $(seq 1 "$REPS"); do
  for mode in unary batch; do
    conc=$([[ $mode == unary ]] && echo 64 || echo 16)
    count=$([[ $mode == unary ]] && echo 2000000 || echo 8000000)
    for setup in plain token tls+token; do
      flags=(--durability memory --shards 2)
      load_flags=()
      if [[ $setup != plain ]]; then
        flags+=(--auth-tokens-file "$certs/tokens.yaml")
        load_flags+=(--token "$token")
      fi
      if [[ $setup == tls+token ]]; then
        flags+=(--tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key")
        load_flags+=(--tls-ca "$certs/ca.crt")
      fi
      lawn_start "${flags[@]}"
      load_run "{\"setup\":\"$setup\",\"rep\":$rep}" --mode "$mode" --concurrency "$conc" --batch 100 \
        --count "$count" --duration "$DURATION" --ttl 1h "${load_flags[@]}" >/dev/null
      lawn_stop
    done
  done
done
rm -rf "$certs"

/usr/bin/python3 - "$OUT/raw.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(mode, setup, field):
    vals = [r[field] for r in rows if r["mode"] == mode and r["setup"] == setup and field in r]
    return statistics.median(vals) if vals else float("nan")
print("| shape | setup | timers/s (median) | vs plain | lawnd CPU us/timer | lawn_load CPU us/timer | load 1m |")
print("|---|---|---|---|---|---|---|")
for mode in ("unary", "batch"):
    base = med(mode, "plain", "timers_per_s")
    for setup in ("plain", "token", "tls+token"):
        rate = med(mode, setup, "timers_per_s")
        print(f"| {mode} | {setup} | {rate:,.0f} | {rate / base:.2f} | {med(mode, setup, 'server_cpu_us_per_timer'):.2f} | "
              f"{med(mode, setup, 'client_cpu_us_per_timer'):.2f} | {med(mode, setup, 'loadavg_1m'):.1f} |")
PY
