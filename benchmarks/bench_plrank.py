"""PL-Rank speed: fairltr's Plackett-Luce sampling + gradient per iteration against the authors'
public numpy code (Oosterhuis, ``HarrieO/2022-SIGIR-plackett-luce``, MIT), in one run.

Both sides get the same data (Q queries x N candidates, scores ~ N(0, 1), graded labels 0..4 as
rewards, DCG weights 1/log2(1 + k) over full rankings) and the same S sampled rankings per query.
One iteration = sample S rankings of every query (Gumbel trick) + the PL-Rank gradient w.r.t. the
scores of every query:

* reference: ``algorithms.PLRank.PL_rank_3`` (their fastest estimator; it samples with
  ``utils.plackettluce.gumbel_sample_rankings``) called once per query, as their ``run.py`` does;
* fairltr: :func:`fairltr.losses.plackett_luce.plrank_sample_gradient` on the padded (Q, N)
  batch: every query at once; with the compiled kernels (numba, the ``[fast]`` extra) each block
  of ~2^17 elements goes from the random bits to the gradient in cache (``FAIRLTR_COMPILED=0``:
  the tensor code, ``sample_rankings`` + ``plrank_gradient``).

Where fairltr's time goes is printed too (CPU time, same rounds): ``sample_rankings`` alone (it
writes the (S, Q, N) rankings), ``plrank_gradient`` alone on stored rankings, and the random
doubles alone (the numbers both sides must draw).

The reference is read from a folder (a checkout or ``git archive`` export of the repository) given
by ``--reference PATH``; it is imported from there and never copied into this repository. Both
estimates are unbiased for the same gradient; as a check both are fed the same sampled rankings and their gradients compared
(they must agree to rounding). Timings: medians over ``--repeats`` rounds, interleaved, of wall-clock time and of this
thread's CPU time (robust to other jobs on a shared machine),
with torch and numpy on ``--threads`` threads (default 1: a fair comparison with numpy, and
robust on a shared machine).

Usage:  python benchmarks/bench_plrank.py --reference /tmp/plrank-ref [--queries 100 --docs 100
        --samples 100] [--json OUT]
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


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, type=Path, help="folder of the authors' PL-Rank code")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="fairltr's device (cpu, cuda)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    _set_threads(args.threads)

    import numpy as np
    import torch

    from fairltr.losses import plrank_gradient, sample_rankings
    from fairltr.losses.plackett_luce import _kernels, plrank_sample_gradient

    torch.set_num_threads(args.threads)
    ref = args.reference.resolve()
    if not (ref / "algorithms" / "PLRank.py").is_file():
        raise SystemExit(f"Error: {ref} does not hold the reference code (algorithms/PLRank.py missing)")
    sys.path.insert(0, str(ref))
    from algorithms.PLRank import PL_rank_3  # noqa: E402  (the reference, imported from its own folder)

    Q, N, S = args.queries, args.docs, args.samples
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((Q, N))
    labels = rng.integers(0, 5, size=(Q, N)).astype(np.float64)
    rewards = 2.0 ** labels - 1.0
    weights = 1.0 / np.log2(np.arange(N) + 2.0)

    dev = torch.device(args.device)
    s_t = torch.as_tensor(scores, device=dev)
    r_t = torch.as_tensor(rewards, device=dev)
    m_t = torch.ones(Q, N, dtype=torch.bool, device=dev)
    gen = torch.Generator().manual_seed(0)

    def ours() -> "torch.Tensor":
        g = plrank_sample_gradient(s_t, r_t, m_t, S, gen)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return g

    def reference() -> "np.ndarray":
        return np.stack([PL_rank_3(weights, rewards[q], scores[q], n_samples=S) for q in range(Q)])

    fixed = sample_rankings(s_t, m_t, S, gen)

    def sampling() -> "torch.Tensor":
        return sample_rankings(s_t, m_t, S, gen)

    def gradient() -> "torch.Tensor":
        return plrank_gradient(s_t, fixed, r_t, m_t)

    def uniforms() -> "object":
        if kernels is not None:  # the kernels' random doubles: numpy's SFC64 stepped in their loop
            out = np.empty(S * Q * N)
            kernels._sfc64_uniforms(kernels.sfc64_state(0), out)
            return out
        return torch.rand((S, Q, N), generator=gen, dtype=s_t.dtype)

    kernels = _kernels() if dev.type == "cpu" else None
    np.random.seed(0)
    ours(), reference()  # warm-up (and the kernels' compilation)
    t_ours, t_ref, c_ours, c_ref = [], [], [], []
    parts: dict[str, list[float]] = {"sampling": [], "gradient": [], "uniform draws": []}
    for _ in range(args.repeats):
        for fn, wall, cpu in ((ours, t_ours, c_ours), (reference, t_ref, c_ref)):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # the process's CPU time (all its threads): robust to other jobs
        for name, fn in (("sampling", sampling), ("gradient", gradient), ("uniform draws", uniforms)):
            c0 = time.process_time()
            fn()
            parts[name].append(time.process_time() - c0)
    med_ours, med_ref = statistics.median(t_ours), statistics.median(t_ref)
    cpu_ours, cpu_ref = statistics.median(c_ours), statistics.median(c_ref)
    cpu_parts = {name: statistics.median(v) for name, v in parts.items()}

    # the same sampled rankings through both implementations: the gradients must agree to rounding
    rk = sample_rankings(s_t, m_t, S, gen)
    g_ours = plrank_gradient(s_t, rk, r_t, m_t).cpu().numpy()
    rk_np = rk.cpu().numpy()
    g_ref = np.stack([PL_rank_3(weights, rewards[q], scores[q], sampled_rankings=rk_np[:, q, :]) for q in range(Q)])
    check = float(np.abs(g_ours - g_ref).max() / np.abs(g_ref).max())
    out = {
        "queries": Q, "docs": N, "samples": S, "threads": args.threads, "device": str(dev),
        "fairltr_s_per_iteration": med_ours, "reference_s_per_iteration": med_ref, "ratio": med_ref / med_ours,
        "fairltr_cpu_s_per_iteration": cpu_ours, "reference_cpu_s_per_iteration": cpu_ref,
        "cpu_ratio": cpu_ref / cpu_ours,
        "fairltr_cpu_s_parts": cpu_parts,
        "max_relative_difference_same_rankings": check,
        "torch": torch.__version__, "numpy": np.__version__,
        "compiled_kernels": kernels is not None,
    }
    print(f"PL sampling + PL-Rank gradient, {Q} queries x {N} docs, {S} samples per query, "
          f"{args.threads} thread(s), fairltr on {dev}:")
    print(f"  reference PL_rank_3 (numpy, per query): {med_ref * 1e3:9.2f} ms wall, {cpu_ref * 1e3:9.2f} ms CPU / iteration")
    how = "compiled kernels (numba)" if kernels is not None else "torch"
    print(f"  fairltr ({how}, batched over queries): {med_ours * 1e3:9.2f} ms wall, {cpu_ours * 1e3:9.2f} ms CPU / iteration")
    print(f"  ratio (reference / fairltr): {med_ref / med_ours:.2f}x wall, {cpu_ref / cpu_ours:.2f}x CPU time")
    print("  fairltr's parts (CPU): " + ", ".join(f"{name} {v * 1e3:.2f} ms" for name, v in cpu_parts.items()))
    print(f"  agreement on the same sampled rankings: max |g_fairltr - g_ref| / max |g_ref| = {check:.1e}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
