"""PL-Rank speed: fairltr's Plackett-Luce sampling + gradient per iteration against the authors'
public numpy code (Oosterhuis, ``HarrieO/2022-SIGIR-plackett-luce``, MIT), in one run.

Cells: every ``--cutoffs`` (DCG@K, the authors' ``--cutoff``; ``none`` = the whole ranking) x
every ``--queries``. A cell's data: Q queries whose lengths are drawn uniformly from ``--docs``
(``10-150``: padded variable-length lists; ``100``: all of one length), scores ~ N(0, 1), graded
labels 0..4 with rewards 2^label - 1, DCG weights 1/log2(1 + k) for the first K positions.
One iteration = sample S rankings of every query (Gumbel trick) + the PL-Rank gradient with
respect to every query's scores:

* reference: ``algorithms.PLRank.PL_rank_3(weights[:K], rewards, scores, n_samples=S)`` (their
  fastest estimator; it samples with ``utils.plackettluce.gumbel_sample_rankings``) called once
  per query on its real items, as their ``run.py`` does;
* fairltr: :func:`fairltr.losses.plackett_luce.plrank_sample_gradient` (``cutoff=K``; the plain
  estimator, the reference's values) on the padded (Q, N) batch: every query at once; with the
  compiled kernels (numba, the ``[fast]`` extra) each block of ~2^17 elements goes from the random
  bits to the gradient in cache, and with K <= 32 the rows' top K are selected, not sorted
  (``FAIRLTR_COMPILED=0``: the tensor code).

Each side runs ``--repeats`` (>= 5) times, interleaved; printed per cell: min / median / max of
each side's wall time and of the per-repeat ratio reference / fairltr (and the same for the
process's CPU time, robust to other jobs on a shared machine). Agreement: both implementations on
the SAME sampled rankings (fairltr's, full rankings) give the same gradient:
max |g_fairltr - g_ref| / max |g_ref| is printed (rounding only; the exact enumeration is in
tests/fairltr/losses/test_pl_cutoff_baseline.py). ``--baseline`` also times fairltr's default
training estimator (the position baseline: different per-sample values, the same expectation).

The reference is read from a folder (a checkout or ``git archive`` export of the repository) given
by ``--reference PATH``; it is imported from there and never copied into this repository. torch and
numpy run on ``--threads`` threads (default 1: a fair comparison with numpy).

Usage:  python benchmarks/bench_plrank.py --reference /tmp/plrank-ref [--docs 10-150 --queries 100,1000
        --cutoffs 5,none --samples 100 --repeats 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def _lengths(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _cutoff(text: str) -> int | None:
    return None if text.strip().lower() == "none" else int(text)


def spread(values: list[float], scale: float = 1.0, fmt: str = ".2f") -> str:
    return " / ".join(format(v * scale, fmt) for v in (min(values), statistics.median(values), max(values)))


def make_cell(n_queries: int, lengths: tuple[int, int], seed: int = 0):
    """Scores, rewards (2^label - 1) and mask (Q, N_max), and each query's length."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = rng.integers(lengths[0], lengths[1] + 1, size=n_queries)
    width = int(n.max())
    mask = np.arange(width)[None, :] < n[:, None]
    scores = np.where(mask, rng.standard_normal((n_queries, width)), 0.0)
    rewards = np.where(mask, 2.0 ** rng.integers(0, 5, size=(n_queries, width)) - 1.0, 0.0)
    return scores, rewards, mask, n


def run_cell(pl_rank_3, n_queries: int, lengths: tuple[int, int], cutoff: int | None, samples: int, repeats: int,
             baseline: bool) -> dict:
    import numpy as np
    import torch

    from fairltr.losses.plackett_luce import plrank_gradient, plrank_sample_gradient, sample_rankings

    scores, rewards, mask, n = make_cell(n_queries, lengths)
    weights = 1.0 / np.log2(np.arange(scores.shape[1]) + 2.0)
    ref_weights = weights if cutoff is None else weights[:cutoff]
    s_t, r_t, m_t = torch.as_tensor(scores), torch.as_tensor(rewards), torch.as_tensor(mask)
    gen = torch.Generator().manual_seed(0)

    def ours():
        return plrank_sample_gradient(s_t, r_t, m_t, samples, gen, cutoff=cutoff)

    def ours_baseline():
        return plrank_sample_gradient(s_t, r_t, m_t, samples, gen, cutoff=cutoff, baseline=True)

    def reference():
        return [pl_rank_3(ref_weights, rewards[q, :n[q]], scores[q, :n[q]], n_samples=samples) for q in range(n_queries)]

    sides = {"fairltr": ours, "reference": reference}
    if baseline:
        sides["fairltr baseline"] = ours_baseline
    np.random.seed(0)
    for fn in sides.values():  # warm-up (and the kernels' compilation)
        fn()
    wall = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    for _ in range(repeats):
        for name, fn in sides.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    # the same sampled rankings (full rankings, real items first) through both implementations
    rk = sample_rankings(s_t, m_t, samples, gen)
    g_ours = plrank_gradient(s_t, rk, r_t, m_t, cutoff=cutoff).numpy()
    rk_np = rk.numpy()
    worst, largest = 0.0, 0.0
    for q in range(n_queries):
        g_ref = pl_rank_3(ref_weights, rewards[q, :n[q]], scores[q, :n[q]], sampled_rankings=rk_np[:, q, :n[q]])
        worst = max(worst, float(np.abs(g_ours[q, :n[q]] - g_ref).max()))
        largest = max(largest, float(np.abs(g_ref).max()))
    cell = {"queries": n_queries, "lengths": list(lengths), "cutoff": cutoff, "samples": samples,
            "real_items": int(n.sum()), "padded_width": int(scores.shape[1]),
            "wall": wall, "cpu": cpu, "max_relative_difference_same_rankings": worst / largest}
    for name in sides:
        if name != "reference":
            cell[f"ratio_wall {name}"] = [a / b for a, b in zip(wall["reference"], wall[name])]
            cell[f"ratio_cpu {name}"] = [a / b for a, b in zip(cpu["reference"], cpu[name])]
    return cell


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, type=Path, help="folder of the authors' PL-Rank code")
    ap.add_argument("--queries", default="100,1000", help="comma list: one cell per value")
    ap.add_argument("--docs", default="10-150", help="list lengths: LOW-HIGH (uniform, padded) or N")
    ap.add_argument("--cutoffs", default="5,none", help="comma list of K (DCG@K) or none")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--baseline", action="store_true", help="also time fairltr's position-baseline estimator")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.repeats < 5:
        raise SystemExit("Error: --repeats must be >= 5 (min / median / max of each side)")
    _set_threads(args.threads)

    import numpy as np
    import torch

    from fairltr.losses.plackett_luce import _kernels

    torch.set_num_threads(args.threads)
    ref = args.reference.resolve()
    if not (ref / "algorithms" / "PLRank.py").is_file():
        raise SystemExit(f"Error: {ref} does not hold the reference code (algorithms/PLRank.py missing)")
    sys.path.insert(0, str(ref))
    from algorithms.PLRank import PL_rank_3  # noqa: E402  (the reference, imported from its own folder)

    lengths = _lengths(args.docs)
    how = "compiled kernels (numba)" if _kernels() is not None else "torch"
    print(f"PL sampling + PL-Rank gradient per iteration, lists of {args.docs} items (padded), {args.samples} "
          f"samples per query, {args.threads} thread(s), fairltr: {how}; {args.repeats} repeats per side")
    print("times in ms min / median / max; ratio = reference / fairltr per repeat, min / median / max")
    cells = []
    for cutoff in (_cutoff(c) for c in args.cutoffs.split(",")):
        for q in (int(x) for x in args.queries.split(",")):
            cell = run_cell(PL_rank_3, q, lengths, cutoff, args.samples, args.repeats, args.baseline)
            cells.append(cell)
            label = f"DCG@{cutoff}" if cutoff is not None else "full DCG"
            print(f"{label}, {q} queries ({cell['real_items']} items, padded to {cell['padded_width']}):")
            print(f"  reference PL_rank_3: wall {spread(cell['wall']['reference'], 1e3)}, "
                  f"CPU {spread(cell['cpu']['reference'], 1e3)}")
            for name in cell["wall"]:
                if name == "reference":
                    continue
                print(f"  {name}: wall {spread(cell['wall'][name], 1e3)}, CPU {spread(cell['cpu'][name], 1e3)}; "
                      f"ratio wall {spread(cell[f'ratio_wall {name}'])}x, CPU {spread(cell[f'ratio_cpu {name}'])}x")
            print(f"  same rankings: max |g_fairltr - g_ref| / max |g_ref| = "
                  f"{cell['max_relative_difference_same_rankings']:.1e}")
    out = {"cells": cells, "threads": args.threads, "torch": torch.__version__, "numpy": np.__version__,
           "compiled_kernels": _kernels() is not None}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
