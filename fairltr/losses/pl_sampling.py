"""Plackett-Luce ranking policies over padded queries (Fair-PG-Rank; PL-Rank): sampling, position
weights and the gradient estimators — pure tensor functions. The disparity and the whole
objective are :mod:`fairltr.losses.pl_objective`; :mod:`fairltr.losses.plackett_luce` names both.

A policy pi_s with scores s (Q, N) ranks a query by drawing items one at a time without
replacement, P(i next | prefix) = exp(s_i) / sum_{j not placed} exp(s_j). Sampling uses the
Gumbel trick: the order of s_i + G_i, G_i ~ Gumbel(0, 1) i.i.d., is a draw of pi_s. Padded
slots are set to -inf, so they are never drawn and always fill the last positions.

Position weights (1-based position k): theta_k = 1 / log2(1 + k) (DCG discount) and the
exposure weight v_k = 1 / ln(1 + k) = V1 * theta_k (docs/spec.md §3, V1 = 1 / ln 2).

* E[DCG]_q = E_y[ sum_k theta_k (2^{y_{y_k}} - 1) ]
* Exp_i = E_y[ v_{rank_y(i)} ] (expected exposure), Exp(G_p) = mean Exp_i over group p's items
* a_p = Exp(G_p)                 (merit=False)
  a_p = Exp(G_p) / U(G_p)        (merit=True, U = mean judgment; "disparate treatment",
                                  Singh & Joachims 2018: exposure proportional to merit)
* disparity D_q = reduce_{p>=1} d(a_0 - a_p) with d(x) = x^2 ("squared", two-sided, Fair-PG-Rank's
  squared disparity) or d(x) = max(0, x) ("hinge": only a protected group's deficit counts);
  a pair whose groups are not both present (or, with merit, has a group of zero merit) adds 0.
* objective per query: E[DCG]_q - lam * D_q (maximised).

Gradients. D depends on s only through Exp, so grad D = sum_i c_i grad Exp_i with
c_i = dD/dExp_i; the whole objective is then E_y[sum_k theta_k rho_{y_k}] with per-item reward
rho_i = gain_i - lam * V1 * c_i. Its gradient w.r.t. s is estimated from S sampled rankings by

* ``"plrank"`` (PL-Rank-2, Oosterhuis 2021, in the cumulative-sum form of PL-Rank-3, 2022):
  for item d at position r_d of a sample y, with R_k = sum_{x>=k} theta_x rho_{y_x} and
  pi(d | y_{1:k-1}) = exp(s_d) / Z_k, Z_k = sum_{x>=k} exp(s_{y_x}):
      g_d = R_{r_d + 1} + sum_{k<=r_d} pi(d | y_{1:k-1}) (theta_k rho_d - R_k)
  averaged over the samples; the sums over k are cumulative sums over positions, so one
  iteration is O(S Q N log N) (the sort) in a few tensor ops over all queries at once (on CPU in
  blocks of samples of ~2^17 elements, so that the temporaries stay in cache).
* ``"reinforce"``: (R(y) - b) grad log pi(y), R(y) = sum_k theta_k rho_{y_k}, b the leave-one-out
  mean reward of the other samples of the query (unbiased).

Both return a surrogate whose gradient (autograd, through any scorer) is the estimate.
"""

from __future__ import annotations

import math
import numbers
from typing import Literal

import torch

from fairltr.errors import ConfigError
from fairltr.losses.exposure import V1

__all__ = [
    "ESTIMATORS", "Estimator", "sample_rankings", "dcg_weights", "ranks_of", "sampled_exposure", "expected_dcg",
    "plrank_gradient", "reinforce_surrogate", "dcg_gains", "plrank_sample_gradient", "BaselineCarry",
    "check_cutoff", "position_weights",
]

ESTIMATORS = ("plrank", "plrank_plain", "reinforce")

Estimator = Literal["plrank", "plrank_plain", "reinforce"]


# elements (samples x queries x candidates) per block of sample_rankings and plrank_gradient on CPU:
# a block's temporaries stay in cache and in malloc's reused heap (whole (S, Q, N) temporaries
# page-fault fresh memory and stream it through RAM: 2-10x the arithmetic's cost)
_BLOCK_ELEMENTS = 1 << 17


def sample_rankings(scores: torch.Tensor, mask: torch.Tensor, n_samples: int,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """``n_samples`` rankings per query of the PL policy of ``scores`` (Q, N): item indices
    (S, Q, N) in ranked order. Real items fill positions 0..n_q-1; padded slots follow (they
    are never drawn before a real item).

    Gumbel trick in its exponential-race form: the order of s_i + G_i (G_i = -log E_i, E_i ~ Exp(1))
    is the increasing order of E_i * exp(-s_i), so one log per draw (E = -log U, U uniform on
    (0, 1)) instead of two. On CPU with the compiled kernels (:mod:`fairltr.losses.pl_kernels`,
    numba, the ``[fast]`` extra) the uniforms are numpy's doubles (SFC64, seeded by one draw of
    ``generator``) and the keys are sorted as integers carrying their item index, in blocks that
    stay in cache. Without them (and on other devices) the uniforms are ``generator``'s doubles
    (drawn on CPU, for reproducibility across devices); on CPU the keys are sorted as in
    :func:`_argsort_rows`, on other devices by torch's argsort. A seed gives the same rankings on
    one code path (not across the two)."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ConfigError(f"samples must be an integer >= 1, got {n_samples!r}")
    s = scores.detach()
    kernels = _kernels() if s.device.type == "cpu" else None
    if kernels is not None:  # compiled: the random bits, the keys and the sort in cache, one pass each
        inputs = kernels.prepare(_numpy64(s), mask.numpy())
        return torch.from_numpy(kernels.sample(inputs, n_samples, _kernel_seed(generator)))
    # exp(-s) with the top real score at 0; capped so that E * rate stays finite for real items
    # (E <= -log(tiny) < 1e4), which therefore always sort before padding (+inf)
    rate = torch.exp(-_shifted(s, mask)).clamp_(max=torch.finfo(s.dtype).max / 1e4).masked_fill(~mask, float("inf"))
    tiny = torch.finfo(s.dtype).tiny
    if s.device.type != "cpu":
        u = torch.rand((n_samples, *s.shape), generator=generator, dtype=s.dtype, device="cpu").to(s.device)
        return torch.argsort(u.clamp_(min=tiny).log_().neg_().mul_(rate), dim=-1)
    import numpy as np

    # blocks of samples, so that every pass but the first write of the output runs in cache; the
    # uniforms are drawn in the same order as one (S, Q, N) draw (the same rankings for a seed)
    out = np.empty((n_samples, *s.shape), dtype=np.float64)
    neg_rate = (-rate).numpy()
    step = max(1, _BLOCK_ELEMENTS // max(1, s.numel()))
    for start in range(0, n_samples, step):
        u = torch.rand((min(step, n_samples - start), *s.shape), generator=generator, dtype=s.dtype)
        keys = u.clamp_(min=tiny).numpy()
        np.log(keys, out=keys)                                                    # numpy's log: ~2x torch's here
        np.multiply(keys, neg_rate, out=out[start:start + len(keys)])             # E * exp(-s) (padding: +inf)
        _argsort_rows(out[start:start + len(keys)])
    return torch.from_numpy(out.view(np.int64))


def _kernels():
    """The compiled CPU kernels (:mod:`fairltr.losses.pl_kernels`), or None without numba (the
    ``[fast]`` extra) or with ``FAIRLTR_COMPILED=0`` (:mod:`fairltr.compiled`): then the tensor
    code runs."""
    from fairltr.compiled import compiled_enabled

    if not compiled_enabled():
        return None
    from fairltr.losses import pl_kernels

    return pl_kernels


def _kernel_seed(generator: torch.Generator | None) -> int:
    """The seed of the kernels' numpy bit generator: one draw from ``generator`` (torch's default
    generator when None, so ``torch.manual_seed`` fixes the rankings)."""
    return int(torch.randint(0, 2 ** 62, (1,), generator=generator).item())


# index bits packed into a key's low mantissa bits: ties within 2^-(52 - b) relative are broken by
# index (b <= 20: at most 2^-32, far below the sampling noise); longer rows use numpy's argsort
_MAX_PACKED_BITS = 20


def _argsort_rows(keys: "np.ndarray") -> "np.ndarray":
    """Per-row argsort (last axis) of non-negative float64 ``keys`` (+inf allowed, sorted last),
    IN PLACE: ``keys`` is overwritten by the int64 indices (returned as an int64 view of it).
    A non-negative double's bit pattern read as int64 orders as the double does; the low
    b = bit_length(n - 1) bits are replaced by the item index, one integer sort (AVX-512 on x86)
    sorts the rows, and the low bits are the argsort. Keys closer than 2^-(52 - b) (relative)
    are ordered by index; rows longer than 2^20 use ``np.argsort``."""
    import numpy as np

    n = keys.shape[-1]
    bits = max(1, (n - 1).bit_length())
    packed = keys.view(np.int64)
    if bits > _MAX_PACKED_BITS:
        packed[...] = np.argsort(keys, axis=-1, kind="quicksort")
        return packed
    low = np.int64((1 << bits) - 1)
    np.bitwise_and(packed, ~low, out=packed)
    np.bitwise_or(packed, np.arange(n, dtype=np.int64), out=packed)
    packed.sort(axis=-1)
    return np.bitwise_and(packed, low, out=packed)


def dcg_weights(n: int, *, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
                ) -> torch.Tensor:
    """theta_k = 1 / log2(1 + k) for positions k = 1..n, shape (n,)."""
    k = torch.arange(1, n + 1, dtype=dtype, device=device)
    return 1.0 / torch.log2(1.0 + k)


def dcg_gains(judgments: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Gains 2^y - 1 (0 on padding)."""
    return torch.expm1(judgments * math.log(2.0)).masked_fill(~mask, 0.0)


def _valid_positions(mask: torch.Tensor) -> torch.Tensor:
    """(Q, N) bool: position k < n_q."""
    n = mask.sum(dim=-1, keepdim=True)
    return torch.arange(mask.shape[-1], device=mask.device).unsqueeze(0) < n


def ranks_of(rankings: torch.Tensor) -> torch.Tensor:
    """0-based position of every item in each sampled ranking, (S, Q, N) (the inverse permutation)."""
    pos = torch.arange(rankings.shape[-1], device=rankings.device).expand_as(rankings)
    return torch.empty_like(rankings).scatter_(-1, rankings, pos)


def check_cutoff(cutoff: int | None) -> int | None:
    """The DCG cut-off: None (the whole ranking) or an integer >= 1 (DCG@K; exposure 0 past K)."""
    if cutoff is None:
        return None
    if isinstance(cutoff, bool) or not isinstance(cutoff, numbers.Integral) or cutoff < 1:
        raise ConfigError(f"cutoff must be None (the whole ranking) or an integer >= 1, got {cutoff!r}")
    return int(cutoff)


def position_weights(n: int, cutoff: int | None = None, *, dtype: torch.dtype = torch.float64,
                     device: torch.device | str | None = None) -> torch.Tensor:
    """theta_k of :func:`dcg_weights`, 0 past ``cutoff`` (DCG@K), shape (n,)."""
    theta = dcg_weights(n, dtype=dtype, device=device)
    if cutoff is not None and cutoff < n:
        theta[cutoff:] = 0.0
    return theta


def sampled_exposure(rankings: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype = torch.float64,
                     cutoff: int | None = None) -> torch.Tensor:
    """Monte-Carlo expected exposure Exp_i = mean over samples of v_{rank(i)}, v_k = 1/ln(1+k) (0 past
    ``cutoff``); (Q, N), 0 on padding."""
    v = V1 * position_weights(rankings.shape[-1], check_cutoff(cutoff), dtype=dtype, device=rankings.device)
    exposure = v[ranks_of(rankings)].mean(dim=0)
    return exposure.masked_fill(~mask, 0.0)


def expected_dcg(rankings: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor,
                 cutoff: int | None = None) -> torch.Tensor:
    """Monte-Carlo E[DCG] (E[DCG@cutoff]) per query, (Q,), gains 2^y - 1 and discount 1/log2(1+k)."""
    gains = dcg_gains(judgments, mask)
    theta = position_weights(rankings.shape[-1], check_cutoff(cutoff), dtype=gains.dtype, device=gains.device)
    placed = torch.gather(gains.unsqueeze(0).expand_as(rankings), -1, rankings)
    return (placed * theta).sum(dim=-1).mean(dim=0)


def _shifted(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Scores minus each query's max over real items, -inf on padding (PL is shift-invariant)."""
    filled = scores.masked_fill(~mask, float("-inf"))
    top = filled.max(dim=-1, keepdim=True).values
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    return filled - top


class BaselineCarry:
    """The carried part beta of PL-Rank's position baseline for one batch (the ``carry`` of
    :func:`plrank_gradient`, :func:`plrank_sample_gradient` and ``pl_policy_objective``): per
    reward channel and 0-based position k, the mean over the previous call's samples of
    R_{k+1} - Theta_{>k} m_k; ``residual`` is None before the first call (then beta = 0). Every
    call that takes it uses it and replaces it by its own samples' mean (a new shape starts
    again from 0). Unbiased: beta never depends on the samples it is used with."""

    def __init__(self) -> None:
        self.residual: torch.Tensor | None = None  # (C, Q, N)

    def value(self, shape: tuple[int, int, int], dtype: torch.dtype, device: torch.device) -> torch.Tensor | None:
        r = self.residual
        return r.to(device, dtype) if r is not None and tuple(r.shape) == tuple(shape) else None


def plrank_gradient(scores: torch.Tensor, rankings: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor,
                    *, cutoff: int | None = None, baseline: bool = False, carry: BaselineCarry | None = None
                    ) -> torch.Tensor:
    """PL-Rank-2 estimate of d/ds E_y[sum_k theta_k rho_{y_k}], (Q, N) (0 on padding), from the
    sampled ``rankings`` (S, Q, N) and per-item ``rewards`` rho (Q, N), or of several reward
    channels at once (C, Q, N) -> (C, Q, N); see the module docstring (``cutoff``: theta_k = 0
    past K; ``baseline``: the position baseline b_k, with ``carry`` its carried part beta).
    Computed as PL-Rank-3 does: reverse cumulative sums of exp(s) give every Z_k, forward
    cumulative sums give the sums over k <= r_d, and the per-sample values are added back to the
    items (one index_add per block of samples: all queries and candidates of ~2^17 elements)."""
    S, Q, N = rankings.shape
    cutoff = check_cutoff(cutoff)
    channels = rewards.dim() == 3
    rho = (rewards if channels else rewards.unsqueeze(0)).detach()
    C = rho.shape[0]
    beta = carry.value((C, Q, N), torch.float64, scores.device) if baseline and carry is not None else None
    kernels = _kernels() if scores.device.type == "cpu" else None
    if kernels is not None:  # compiled: one loop per pass over each sampled row, no (S, Q, N) temporaries
        inputs = kernels.prepare(_numpy64(scores), mask.numpy(), _numpy64(rho))
        sums = kernels.gradient_of_rankings(inputs, rankings.numpy(), cutoff, baseline,
                                            carry=None if beta is None else beta.permute(1, 2, 0).numpy())
        grad = torch.from_numpy(sums.grad).permute(2, 0, 1).to(scores.dtype).div_(S)
        residual = torch.from_numpy(sums.residual).permute(2, 0, 1).div_(S)
    else:
        grad, residual = _tensor_plrank(scores, rankings, rho, mask, cutoff, baseline, beta)
    if baseline and carry is not None:
        carry.residual = residual
    grad = grad.masked_fill_(~mask, 0.0)
    return grad if channels else grad[0]


def _tensor_plrank(scores, rankings, rho, mask, cutoff, baseline, beta) -> tuple[torch.Tensor, torch.Tensor]:
    """The tensor code of :func:`plrank_gradient`: (gradient (C, Q, N), mean residuals (C, Q, N))."""
    S, Q, N = rankings.shape
    s = _shifted(scores.detach(), mask)                                           # max real score 0
    dtype = s.dtype
    e = torch.exp(s).view(-1)                                                     # 0 on padding
    rho = rho.to(dtype).masked_fill(~mask, 0.0)
    C = rho.shape[0]
    theta = position_weights(N, cutoff, dtype=dtype, device=s.device)
    spread = _baseline_spread(mask, theta) if baseline else None
    rsum = rho.sum(-1).view(C, 1, Q, 1)
    rho = rho.reshape(C, -1)
    beta = None if beta is None else beta.to(dtype).unsqueeze(1)                  # (C, 1, Q, N)
    offsets = (torch.arange(Q, device=rankings.device) * N).view(1, Q, 1)
    valid = None if bool(mask.all()) else _valid_positions(mask).unsqueeze(0)
    grad = torch.zeros(C, Q * N, dtype=dtype, device=s.device)
    residual = torch.zeros(C, Q, N, dtype=dtype, device=s.device)
    step = max(1, _BLOCK_ELEMENTS // max(1, C * Q * N)) if s.device.type == "cpu" else S
    for start in range(0, S, step):
        _plrank_block(rankings[start:start + step], offsets, e, rho, theta, valid, grad, spread, rsum, beta,
                      residual)
    return grad.div_(S).view(C, Q, N), residual.div_(S)


def _baseline_spread(mask: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """(Q, N): Theta_{>k} / (n_q - k) at the 0-based positions k < n_q (0 after): the baseline
    b_k = Theta_{>k} m_k is this times the rewards of the items not placed before k, summed."""
    n = mask.sum(-1, keepdim=True)                                                # (Q, 1)
    ctheta = torch.cat([theta.new_zeros(1), theta.cumsum(0)])                     # (N + 1,)
    k = torch.arange(mask.shape[-1], device=mask.device).unsqueeze(0)             # (1, N)
    upper = ctheta[n.clamp(max=mask.shape[-1])]                                   # Theta_{< n_q}
    later = (upper - ctheta[(k + 1).clamp(max=mask.shape[-1])]).clamp(min=0.0)
    return torch.where(k < n, later / (n - k).clamp(min=1).to(theta.dtype), torch.zeros_like(later))


def _numpy64(values: torch.Tensor) -> "np.ndarray":
    """A float64 numpy copy (or view) of a CPU tensor, detached."""
    return values.detach().to(torch.float64).contiguous().numpy()


def plrank_sample_gradient(scores: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor, n_samples: int,
                           generator: torch.Generator | None = None, *, cutoff: int | None = None,
                           baseline: bool = False, carry: BaselineCarry | None = None) -> torch.Tensor:
    """``plrank_gradient(scores, sample_rankings(scores, mask, n_samples, generator), rewards, mask)``
    without the (S, Q, N) rankings: on CPU with the compiled kernels every block of samples goes
    from the random bits to the gradient in cache (the same rankings, hence the same gradient, as
    the two calls with the same seed; with a cut-off of at most ``SELECT_MAX`` the rows are not
    sorted, their top K selected); elsewhere the two calls. One iteration of PL-Rank for fixed
    rewards (relevance, or a fairness reward that does not depend on these samples)."""
    s = scores.detach()
    cutoff = check_cutoff(cutoff)
    kernels = _kernels() if s.device.type == "cpu" else None
    if kernels is None or rewards.dim() != 2:
        return plrank_gradient(scores, sample_rankings(scores, mask, n_samples, generator), rewards, mask,
                               cutoff=cutoff, baseline=baseline, carry=carry)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ConfigError(f"samples must be an integer >= 1, got {n_samples!r}")
    Q, N = s.shape
    beta = carry.value((1, Q, N), torch.float64, s.device) if baseline and carry is not None else None
    inputs = kernels.prepare(_numpy64(s), mask.numpy(), _numpy64(rewards))
    sums = kernels.sample_gradient(inputs, n_samples, _kernel_seed(generator), cutoff, baseline,
                                   carry=None if beta is None else beta.permute(1, 2, 0).numpy())
    if baseline and carry is not None:
        carry.residual = torch.from_numpy(sums.residual).permute(2, 0, 1).div_(n_samples)
    return torch.from_numpy(sums.grad[..., 0]).to(s.dtype).div_(n_samples).masked_fill(~mask, 0.0)


def _plrank_block(rankings: torch.Tensor, offsets: torch.Tensor, e: torch.Tensor, rho: torch.Tensor,
                  theta: torch.Tensor, valid: torch.Tensor | None, grad: torch.Tensor,
                  spread: torch.Tensor | None, rsum: torch.Tensor, beta: torch.Tensor | None,
                  residual: torch.Tensor) -> None:
    """Adds the PL-Rank terms of the samples ``rankings`` (B, Q, N) to ``grad`` (C, Q*N) for the C
    reward channels ``rho`` (C, Q*N), and the baseline's residuals to ``residual`` (C, Q, N)."""
    B, Q, N = rankings.shape
    C = rho.shape[0]
    flat = rankings.add(offsets).view(-1)  # item index into the flattened (Q*N,) arrays
    e_sorted = e.index_select(0, flat).view(B, Q, N)
    rho_sorted = rho.index_select(1, flat).view(C, B, Q, N)
    r = rho_sorted * theta                                                        # 0 on padding (rho = 0)
    # R_{k+1} = sum_{x>k} r_x = total - sum_{x<=k} r_x: one cumulative sum, in place (the absolute
    # rounding error is that of the total); Z_k below needs a true reverse sum (it is divided by)
    r_next = r.cumsum(-1)
    total = r_next[..., -1:].clone()
    r_next = r_next.neg_().add_(total)
    if spread is not None:  # R_{k+1} - b_k, b_k = spread_k * (the rewards not placed before k) + beta_k
        before = rho_sorted.cumsum(-1).sub_(rho_sorted)
        r_next.sub_(before.neg_().add_(rsum).mul_(spread))
        residual.add_(r_next.sum(1))
        if beta is not None:
            r_next.sub_(beta)
    z = e_sorted.flip(-1).cumsum_(-1).flip(-1)                                    # Z_k = sum_{x>=k} exp(s)
    # Z_1 >= 1 (the top real item has exp(0)); Z_k = 0 only on padded positions, whose values are
    # dropped below; the floor keeps them finite (theta / Z_k summed over <= N positions)
    inv_z = z.clamp_(min=torch.finfo(e.dtype).max ** -0.5).reciprocal_()
    b = r.add_(r_next).mul_(inv_z).cumsum_(-1)                                    # sum_{k<=r} (R_k - b_k) / Z_k
    a = inv_z.mul_(theta).cumsum_(-1)                                             # sum_{k<=r} theta_k / Z_k
    # g = R_{r+1} - b_r + exp(s_d) (rho_d a_r - c_r); in place, no new buffers
    g = r_next.add_(a.mul(rho_sorted).sub_(b).mul_(e_sorted))
    if valid is not None:  # padded positions (a finite value times e = 0) are dropped
        g = g.mul_(valid)
    grad.index_add_(1, flat, g.view(C, -1))


def _log_policy(scores: torch.Tensor, rankings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log pi(y) of every sampled ranking, (S, Q), differentiable in ``scores``."""
    S, Q, N = rankings.shape
    s = scores.masked_fill(~mask, float("-inf"))
    s_sorted = torch.gather(s.unsqueeze(0).expand(S, Q, N), -1, rankings)
    log_z = torch.logcumsumexp(s_sorted.flip(-1), dim=-1).flip(-1)
    valid = _valid_positions(mask).unsqueeze(0).expand(S, Q, N)
    terms = torch.where(valid, s_sorted - log_z, torch.zeros_like(s_sorted))
    return terms.sum(dim=-1)


def reinforce_surrogate(scores: torch.Tensor, rankings: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor,
                        *, cutoff: int | None = None) -> torch.Tensor:
    """Per-query surrogate (Q,) whose gradient is the REINFORCE estimate with a leave-one-out
    baseline: mean_s (R(y_s) - mean_{t != s} R(y_t)) grad log pi(y_s) (theta 0 past ``cutoff``)."""
    S, Q, N = rankings.shape
    valid = _valid_positions(mask).unsqueeze(0)
    theta = position_weights(N, check_cutoff(cutoff), dtype=scores.dtype, device=scores.device) * valid
    rho_sorted = torch.gather(rewards.detach().to(scores.dtype).unsqueeze(0).expand(S, Q, N), -1, rankings)
    total = (theta * rho_sorted.masked_fill(~valid, 0.0)).sum(-1)               # (S, Q)
    baseline = (total.sum(0, keepdim=True) - total) / (S - 1) if S > 1 else torch.zeros_like(total)
    return ((total - baseline).detach() * _log_policy(scores, rankings, mask)).mean(dim=0)
