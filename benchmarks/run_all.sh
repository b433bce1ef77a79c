#!/usr/bin/env bash
# Regenerate every benchmark table in one command (issue 34, item 10):
#
#     benchmarks/run_all.sh                 # every benchmark, outputs in benchmarks/results/<name>.txt
#     benchmarks/run_all.sh sweep encode    # only the named ones (names as listed below)
#     benchmarks/run_all.sh --list          # the names and commands
#
# Run it on a quiet machine: each script measures its ratios within its own run (each side
# repeated >= 5 times, min / median / max printed), but absolute seconds depend on the load.
# Every script's stdout + stderr go to benchmarks/results/<name>.txt; a failing script is noted
# in benchmarks/results/run_all.txt and the others still run. docs/benchmarks.md quotes only
# figures these files hold.
#
# Environment: PYTHON (default .venv/bin/python); REFVENV, a venv with the Geyik peers
# (FairRankTune, fairsearchcore) for bench_geyik / compare_geyik / bench_fair;
# PLRANK_REF, a checkout of the PL-Rank authors' code for bench_plrank; OPTUNA_PG, a PostgreSQL
# URI for bench_workers; bench_cluster needs root (network namespaces). A benchmark whose
# requirement is missing is skipped with the reason in run_all.txt.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=benchmarks/results
mkdir -p "$OUT"
export MLFLOW_DISABLE_TELEMETRY=true TOKENIZERS_PARALLELISM=false
unset PYTHONDONTWRITEBYTECODE

REF=${REFVENV:+--reference-python $REFVENV/bin/python}
declare -a NAMES=() CMDS=() NEEDS=()
add() { NAMES+=("$1"); NEEDS+=("$2"); CMDS+=("$3"); }
# name | requirement (empty: none) | command
add deltr           ""            "$PY benchmarks/bench_deltr.py --big 10000x100x32 --rounds 20"
add deltr_memory    ""            "$PY benchmarks/bench_deltr_memory.py --repeats 5 --dtype float32 float64"
add memory          ""            "$PY benchmarks/bench_memory.py"
add encode          ""            "$PY benchmarks/bench_encode.py --docs 256 --repeat 5"
add sweep           ""            "$PY benchmarks/bench_sweep.py --trials 50 --out outputs/bench_sweep"
add bootstrap       ""            "$PY benchmarks/bench_bootstrap.py --queries 2000 --repeat 5"
add kendall         ""            "$PY benchmarks/bench_kendall.py"
add mtable_cache    ""            "$PY benchmarks/bench_mtable_cache.py --repeat 5"
add multinomial     ""            "$PY benchmarks/bench_multinomial.py --repeat 5"
add fair            ""            "$PY benchmarks/bench_fair.py --repeat 5"
add geyik           "REFVENV"     "$PY benchmarks/bench_geyik.py $REF"
add compare_geyik   "REFVENV"     "$PY benchmarks/compare_geyik.py $REF"
add plrank          "PLRANK_REF"  "$PY benchmarks/bench_plrank.py --reference ${PLRANK_REF:-}"
add startup         ""            "$PY benchmarks/bench_startup.py --repeat 7"
add serving         ""            "$PY benchmarks/bench_serving.py"
add retriever_model ""            "$PY benchmarks/bench_retriever_model.py"
add streaming       ""            "$PY benchmarks/bench_streaming.py --rows 10000000 --data-dir outputs/bench-streaming"
add workers         "OPTUNA_PG"   "$PY benchmarks/bench_workers.py --storage ${OPTUNA_PG:-} --trials 40"
add cluster         "root"        "$PY benchmarks/bench_cluster.py sweep --trials 24"
add monitor_power   ""            "$PY benchmarks/monitor_power.py --years 200"

if [ "${1:-}" = "--list" ]; then
  for i in "${!NAMES[@]}"; do printf '%-16s %s\n' "${NAMES[$i]}" "${CMDS[$i]}"; done
  exit 0
fi
want=" $* "
summary="$OUT/run_all.txt"
echo "run_all.sh $(date -u +%FT%TZ) on $(uname -m), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)" > "$summary"
status=0
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]} need=${NEEDS[$i]} cmd=${CMDS[$i]}
  if [ $# -gt 0 ] && [[ "$want" != *" $name "* ]]; then continue; fi
  if [ -n "$need" ]; then
    if { [ "$need" = root ] && [ "$(id -u)" != 0 ]; } || { [ "$need" != root ] && [ -z "${!need:-}" ]; }; then
      echo "$name: skipped (needs $need)" | tee -a "$summary"
      continue
    fi
  fi
  echo "== $name: $cmd" | tee -a "$summary"
  start=$(date +%s)
  if $cmd > "$OUT/$name.txt" 2>&1; then
    echo "   ok in $(( $(date +%s) - start )) s -> $OUT/$name.txt" | tee -a "$summary"
  else
    rc=$?
    status=1
    echo "   FAILED (exit $rc) in $(( $(date +%s) - start )) s; see $OUT/$name.txt" | tee -a "$summary"
  fi
done
exit $status
