"""The DELTR paper's comparison as Pareto fronts: DELTR vs FA*IR post- and pre-processing.

For each dataset, three NSGA-II studies with the same budget and seed, on the sweep's default
objectives (``kendall_tau`` up, ``exposure_disparity`` = 1 - min(R, 1/R) down, R the exposure
ratio protected / non-protected; measured on the test set) — DELTR over gamma (log scale with a
mass at 0), FA*IR post-processing of a gamma = 0 ranking over (fair_p, fair_alpha), FA*IR
pre-processing of the training lists over (fair_p, fair_alpha) — then each front's hypervolume
against one stated reference point per dataset, twice:

* ``hypervolume``: on the optimised objectives (kendall_tau, exposure_disparity): distance from
  parity either way, so over-exposing the protected group costs as much as under-exposing it;
* ``hypervolume_shortfall``: on (kendall_tau, exposure_shortfall = max(0, 1 - R)), DELTR's own
  asymmetric notion: any R >= 1 is fair, over-correcting is neither rewarded nor penalised.
  (Computed from all trials: dominated points add no area, so no front is needed.)

``max_tau_at_disparity_le_0.05``: the best relevance among trials within 5% of exposure parity
(0.95 <= R <= 1/0.95).

Law race: the paper's single train/test split. TREC: each trial trains and evaluates on all
six folds and its metrics are the mean over folds (the paper averages folds the same way). The
authors' reported results (``paper-results/``) are overlaid as grey diamonds, with R taken from
their total protected / non-protected exposure.

    python benchmarks/pareto_comparison.py --trials 40            # ~5-10 min on 1 core
    python benchmarks/pareto_comparison.py --datasets law-race --trials 12 --out outputs/quick
    python benchmarks/pareto_comparison.py --trials 40 --seed 1 --out outputs/pareto_s1   # more seeds
    python benchmarks/pareto_comparison.py --aggregate outputs/pareto outputs/pareto_s1 outputs/pareto_s2

Writes ``<out>/pareto_<dataset>.png``, ``<out>/pareto_table.md`` / ``.csv`` and per-study front
CSVs; ``--docs`` also copies the figures and the table into ``docs/``.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "deltr-experiments"

# reference points, stated once: tau 0 = no better than a random order; the disparity a little
# above standard (gamma = 0) ListNet's (law race 0.153, TREC 0.212 averaged over folds)
REFERENCE = {
    "law-race": {"kendall_tau": 0.0, "exposure_disparity": 0.2},
    "trec": {"kendall_tau": 0.0, "exposure_disparity": 0.25},
}
NEAR_PARITY = 0.05  # max_tau_at_disparity_le_0.05
METHODS = ("deltr", "fair-post", "fair-pre")
PAPER_SETTINGS = {  # file tag -> label
    "Gamma=0": "paper ListNet", "Gamma=colorblind": "paper colorblind", "Gamma=small": "paper DELTR small",
    "Gamma=large": "paper DELTR large", "FAIR_PStar": "paper FA*IR post p*", "Gamma=PREPROCESSED": "paper FA*IR pre p*",
}


def load_folds(dataset: str, data: Path):
    from fairltr.io import read_deltr_csv

    if dataset == "law-race":
        d = data / "LawStudents" / "race_black"
        return [(read_deltr_csv(d / "LawStudents_Race_train.txt"), read_deltr_csv(d / "LawStudents_Race_test.txt"))]
    if dataset == "trec":
        out = []
        for k in range(1, 7):
            d = data / "TREC" / f"fold_{k}"
            stem = "features_withListNetFormat_withGender_withZscore_candidateAmount-200_"
            out.append((read_deltr_csv(d / f"{stem}train.csv"), read_deltr_csv(d / f"{stem}test.csv")))
        return out
    raise SystemExit(f"unknown dataset {dataset!r}; use law-race or trec")


def paper_points(dataset: str, data: Path) -> dict[str, tuple[float, float]]:
    """(kendall_tau, exposure_disparity of R = prot / nprot exposure) from the authors' result sheets."""
    from fairltr.metrics import exposure_disparity

    folder = data / "paper-results" / ("LawStudents/race_black/results" if dataset == "law-race" else "TREC/results")
    points = {}
    for f in sorted(folder.glob("performanceResults_*.txt")):
        tag = re.sub(r"^performanceResults_|_(law-black|trec)\.txt$", "", f.name)
        if tag not in PAPER_SETTINGS:
            continue
        vals = {}
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                try:
                    vals[parts[0]] = float(parts[1])
                except ValueError:
                    pass
        if {"kendall-tau", "exposure-prot-pred", "exposure-nprot-pred"} <= vals.keys():
            ratio = vals["exposure-prot-pred"] / vals["exposure-nprot-pred"]
            points[PAPER_SETTINGS[tag]] = (vals["kendall-tau"], float(exposure_disparity(ratio)))
    return points


def run_dataset(dataset: str, args, storage) -> tuple[list, dict, pd.DataFrame]:
    from fairltr.workflows import ranking_trial
    from tuning.objectives import DEFAULT_OBJECTIVES, parse_objectives
    from tuning.pareto import hypervolume_2d
    from tuning.study import make_sampler, open_study, run_worker
    from tuning.sweep import make_objective, study_reports

    folds = load_folds(dataset, args.data)
    objectives = parse_objectives(DEFAULT_OBJECTIVES)
    names = []
    timing = {}
    hp_names = {}
    for method in METHODS:
        name = f"{dataset}-{method}-s{args.seed}"
        runner = ranking_trial(method, folds, seed=args.seed)
        sampler = make_sampler("nsga2", args.seed, n_trials=args.trials)
        study, _ = open_study(name, storage, [o.direction for o in objectives], sampler,
                              {"method": method, "objectives": [o.name for o in objectives],
                               "constraints": [], "hyperparameters": runner.space.names,
                               "search_space": repr(runner.space)}, metric_names=[o.name for o in objectives])
        t0 = time.perf_counter()
        run_worker(study, make_objective(runner, objectives, []), args.trials, storage=storage, poll_seconds=0.1)
        timing[method] = time.perf_counter() - t0
        print(f"  {name}: {args.trials} trials in {timing[method]:.1f} s", flush=True)
        names.append(name)
        hp_names[method] = runner.space.names
    ref = REFERENCE[dataset]
    ref_text = ",".join(f"{k}={v}" for k, v in ref.items())
    reports, frames = study_reports(storage, names, objectives, [], ref_text)
    rows = []
    for rep in reports:
        df = frames[rep.study]
        near = df["exposure_disparity"] <= NEAR_PARITY
        best = rep.best or {}
        rows.append({
            "dataset": dataset, "method": rep.method, "trials": rep.n_complete, "front_size": len(rep.front),
            "hypervolume": rep.hypervolume,
            "hypervolume_shortfall": hypervolume_2d(df[["kendall_tau", "exposure_shortfall"]].to_numpy(float),
                                                    rep.directions, [ref["kendall_tau"], ref["exposure_disparity"]]),
            "max_tau": float(df["kendall_tau"].max()),
            f"max_tau_at_disparity_le_{NEAR_PARITY}": float(df.loc[near, "kendall_tau"].max()) if near.any() else math.nan,
            "best_tradeoff": ", ".join(f"{k}={best[k]:.3g}" for k in (*hp_names[rep.method], "kendall_tau",
                                                                       "exposure_disparity", "exposure_ratio")
                                       if k in best),
            "seconds": timing[rep.method],
            "reference": f"({ref['kendall_tau']}, {ref['exposure_disparity']})",
        })
    return reports, frames, pd.DataFrame(rows)


def aggregate(folders: list[Path]) -> str:
    """Markdown: per dataset and method, hypervolumes and max tau near parity over seeds
    (mean and min..max), from the ``pareto_table.csv`` of several runs (one seed each)."""
    tabs = []
    for i, f in enumerate(folders):
        t = pd.read_csv(f / "pareto_table.csv")
        t["run"] = i
        tabs.append(t)
    t = pd.concat(tabs, ignore_index=True)
    rows = []
    for (ds, m), g in t.groupby(["dataset", "method"], sort=False):
        def stat(col):
            v = g[col].to_numpy(dtype=float)
            return f"{np.nanmean(v):.4g} ({np.nanmin(v):.4g}..{np.nanmax(v):.4g})"
        near = f"max_tau_at_disparity_le_{NEAR_PARITY}"
        rows.append({"dataset": ds, "method": m, "seeds": len(g), "hypervolume": stat("hypervolume"),
                     "hypervolume_shortfall": stat("hypervolume_shortfall"), near: stat(near)})
    return markdown_table(pd.DataFrame(rows))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aggregate", nargs="+", type=Path, default=None,
                    help="only summarise the pareto_table.csv of these output folders (one seed each)")
    ap.add_argument("--datasets", default="law-race,trec")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "outputs" / "pareto")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--docs", action="store_true", help="copy figures and table into docs/")
    args = ap.parse_args(argv)
    if args.aggregate:
        print(aggregate(args.aggregate))
        return
    torch.set_num_threads(1)
    import optuna

    from tuning.plots import plot_fronts
    from tuning.study import make_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if not args.data.is_dir():
        sys.exit(f"DELTR paper data not found at {args.data}")
    args.out.mkdir(parents=True, exist_ok=True)
    storage = make_storage(f"sqlite:///{(args.out / 'pareto.db').resolve()}")
    tables = []
    for dataset in args.datasets.split(","):
        print(f"{dataset}: {args.trials} trials per method, seed {args.seed}", flush=True)
        reports, frames, table = run_dataset(dataset, args, storage)
        fig = plot_fronts(reports, frames, args.out / f"pareto_{dataset.replace('-', '_')}.png",
                          title=f"{dataset}: DELTR vs FA*IR ({args.trials} NSGA-II trials each"
                                + (", mean of 6 folds)" if dataset == "trec" else ")"),
                          markers=paper_points(dataset, args.data), dpi=90)
        for rep in reports:
            rep.front.to_csv(args.out / f"front_{rep.study}.csv", index=False)
        tables.append(table)
        print(table.drop(columns=["best_tradeoff"]).to_string(index=False), flush=True)
        if args.docs:
            shutil.copy(fig, REPO / "docs" / fig.name)
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(args.out / "pareto_table.csv", index=False)
    md = markdown_table(table[["dataset", "method", "trials", "front_size", "hypervolume", "hypervolume_shortfall",
                               "max_tau", f"max_tau_at_disparity_le_{NEAR_PARITY}", "best_tradeoff", "reference"]])
    (args.out / "pareto_table.md").write_text(md + "\n")
    if args.docs:
        shutil.copy(args.out / "pareto_table.md", REPO / "docs" / "pareto_table.md")
    print(md)


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub Markdown table; floats with 4 significant digits."""
    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
