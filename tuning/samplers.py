"""Samplers for sweeps: NSGA-II (default), TPE or GP, one per worker, seeded from the worker's
first trial number (:class:`WorkerSampler`)."""

from __future__ import annotations

import hashlib
import warnings
from typing import Any

import optuna

from fairltr.errors import ConfigError

__all__ = ["SAMPLERS", "make_sampler", "WorkerSampler", "worker_seed"]

SAMPLERS = ("nsga2", "tpe", "gp")


def worker_seed(seed: int, first_trial: int) -> int:
    """Seed of a worker's sampler: a hash of (``seed``, the number of the worker's first trial)
    in [0, 2**32)."""
    digest = hashlib.blake2b(f"{int(seed)}:{int(first_trial)}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def _base_sampler(name: str, seed: int | None, population_size: int, n_startup_trials: int):

    if name == "nsga2":
        # SBX crossover (always, every gene) + polynomial mutation: children near good parents,
        # never an exact copy of one. Optuna's defaults (uniform crossover, mutation = random
        # resampling with probability 1/n_params) make NSGA-II a random search on the 1-2
        # continuous parameters these sweeps have.
        from optuna.samplers.nsgaii import PolynomialMutation, SBXCrossover

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.NSGAIISampler(population_size=population_size, seed=seed, crossover_prob=1.0,
                                                 crossover=SBXCrossover(use_child_gene_prob=1.0),
                                                 mutation=PolynomialMutation())
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup_trials, multivariate=True)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup_trials)
    raise ConfigError(f"unknown sampler {name!r}; choose one of {list(SAMPLERS)}")


class WorkerSampler(optuna.samplers.BaseSampler):
    """One sampler (NSGA-II, TPE or GP) for a worker's whole life, created at the worker's first
    trial and seeded with :func:`worker_seed(seed, that trial's number) <worker_seed>`; every later
    trial of the worker uses the same instance (its random stream and caches, e.g. the GP
    sampler's fitted kernel, carry over).

    Why created lazily: Optuna numbers trials under a lock, so the first trial number is the only
    identity a worker gets that is unique among the workers of a study and the same for the same
    study state. One worker on a fresh study is therefore reproducible for a seed (first trial 0),
    while workers started with the same ``--seed`` never replay one random stream. Optuna's
    samplers take a seed only at construction, so this class holds the sampler until it can be
    built.
    """

    def __init__(self, name: str, seed: int, population_size: int = 10, n_startup_trials: int = 10) -> None:
        _base_sampler(name, 0, population_size, n_startup_trials)  # validates name and arguments
        self.name, self.seed = name, int(seed)
        self.population_size, self.n_startup_trials = population_size, n_startup_trials
        self.base: Any = None
        self.first_trial: int | None = None

    def _sampler(self, trial) -> Any:
        if self.base is None:
            self.first_trial = trial.number
            self.base = _base_sampler(self.name, worker_seed(self.seed, trial.number), self.population_size,
                                      self.n_startup_trials)
        return self.base

    # optuna.samplers.BaseSampler protocol (the base sampler exists once before_trial has run)
    def before_trial(self, study, trial) -> None:
        self._sampler(trial).before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._sampler(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._sampler(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._sampler(trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        self._sampler(trial).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        if self.base is not None:
            self.base.reseed_rng()


def make_sampler(name: str = "nsga2", seed: int = 0, *, n_trials: int = 50, population_size: int | None = None):
    """A worker's sampler by name (``nsga2`` default, ``tpe``, ``gp``): :class:`WorkerSampler`.

    NSGA-II's population defaults to ``clip(n_trials // 5, 4, 50)`` so that a 30-50 trial budget
    runs several generations (Optuna's default of 50 would keep the whole budget random).
    """
    if name not in SAMPLERS:
        raise ConfigError(f"unknown sampler {name!r}; choose one of {list(SAMPLERS)}")
    pop = population_size if population_size is not None else min(50, max(4, n_trials // 5))
    if pop < 2:
        raise ConfigError(f"population size must be >= 2, got {pop}")
    return WorkerSampler(name, seed, population_size=pop, n_startup_trials=min(10, max(2, n_trials // 3)))
