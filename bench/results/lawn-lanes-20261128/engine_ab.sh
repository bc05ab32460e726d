#!/bin/bash
# A = 5ad77e6's engine with 76bc2ec's lawn_bench (the Delete restart order), B = 76bc2ec.
out=/work/main/bench/results/lawn-lanes-20261128
for round in 1 2; do
  for bin in A2 B2; do
    echo "$(date +%T) $bin round $round load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/runs.txt
    /tmp/lawn_bench_$bin --benchmark_filter='(Memory|Start|StartRun|Delete|DeleteRun|Expire)_(Engine|Heap|Multimap)_(Fixed|Random)Ttls/1000000$' \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=json > $out/${bin}_$round.json 2>/dev/null
  done
done
echo "$(date +%T) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/runs.txt
