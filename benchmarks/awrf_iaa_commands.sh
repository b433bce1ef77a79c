#!/usr/bin/env bash
# Runs, verbatim, the commands of docs/fair.md "AWRF and the TREC Fair 2022 score; IAA" (evaluate with
# intervals, promotion gates, a sweep on them) on a 150-query quickstart, in a throwaway MLflow store
# (outputs/awrf-demo/mlflow.db). Output: benchmarks/results/awrf_iaa_commands.txt
#   bash benchmarks/awrf_iaa_commands.sh > benchmarks/results/awrf_iaa_commands.txt 2>&1
set -euo pipefail
export MLFLOW_DISABLE_TELEMETRY=true
rm -rf outputs/awrf-demo && mkdir -p outputs/awrf-demo
export MLFLOW_TRACKING_URI=sqlite:///outputs/awrf-demo/mlflow.db
run() { echo "\$ $*"; "$@"; echo; }
run .venv/bin/fairltr quickstart --queries 150 --out outputs/qs150 --no-track
run .venv/bin/fairltr train deltr --train outputs/qs150/train.csv --test outputs/qs150/test.csv --gamma 1000 --out outputs/qs150-g1000 --register fair-ranker-awrf
run .venv/bin/fairltr train deltr --train outputs/qs150/train.csv --test outputs/qs150/test.csv --gamma 0 --out outputs/qs150-g0 --register fair-ranker-awrf
run .venv/bin/fairltr evaluate --model outputs/qs150-g1000/model.json --data outputs/qs150/test.csv --k 10 --ci 0.95 --out outputs/qs150-g1000-eval.json
echo '$ python3 -c (the awrf, ndcg_awrf and iaa keys of outputs/qs150-g1000-eval.json)'
python3 -c 'import json; m = json.load(open("outputs/qs150-g1000-eval.json")); [print(k, m[k]) for k in m if k.split("_ci_")[0].split("_n_queries")[0] in ("awrf", "ndcg_awrf", "iaa")]'
echo
run .venv/bin/fairltr promote --model fair-ranker-awrf --version 1 --data outputs/qs150/test.csv --gate "awrf>=0.99" --gate "ndcg_awrf>=0.95" --gate "iaa<=1.0" --confidence 0.95
echo "\$ .venv/bin/fairltr promote --model fair-ranker-awrf --version 2 --data outputs/qs150/test.csv --gate \"awrf>=champion-0.001\" --gate \"iaa<=champion\" --confidence 0.95"
.venv/bin/fairltr promote --model fair-ranker-awrf --version 2 --data outputs/qs150/test.csv --gate "awrf>=champion-0.001" --gate "iaa<=champion" --confidence 0.95 || echo "(exit $?: rejected)"
echo
rm -rf outputs/sweep-awrf
run .venv/bin/fairltr sweep --method deltr --train outputs/qs150/train.csv --test outputs/qs150/test.csv --study awrf-iaa --trials 4 --objectives ndcg_awrf,iaa --no-mlflow --no-progress --out outputs/sweep-awrf
