"""``fairltr sweep``: Optuna multi-objective Pareto sweeps: parse options, call the sweep
workflow, print. Optuna, MLflow and the ``tuning`` package are imported inside the command only.
"""

from __future__ import annotations

import click

from fairltr.cli.app import cli
from fairltr.cli.option_rules import Rule, option_rules, reading_rules, tracking_rules, used_when
from fairltr.cli.options import DeclaredChoice, stack, group_option, ranking_columns, read_settings, reading_options
from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import ConfigError


def _sweep_method_names() -> list[str]:
    """The registered sweep methods (:mod:`fairltr.workflows.sweep_plugins`), a plugin's too."""
    from fairltr.workflows.sweep_plugins import sweep_method_names

    return sweep_method_names()


def _pair(text: str | None, name: str) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"{name} must be LOW,HIGH (two numbers), got {text!r}") from None
    return lo, hi


# The sweep settings each built-in method reads (SweepConfig fields the registry does not declare
# per method); a method registered elsewhere is not refused them.
BUILTIN_METHOD_READS = {
    "deltr": {"max_iter"},
    "fair-pre": {"fair_p_range", "fair_alpha_range", "max_iter"},
    "fair-post": {"fair_p_range", "fair_alpha_range", "max_iter"},
    "dpr": set(),
    "lambdamart": set(),
    "lambdamart+fair": {"fair_p_range", "fair_alpha_range"},
    "detconstsort": {"fair_p_range", "max_iter"},  # geyik_p's range is FA*IR's fair_p range
    "lambdamart+detconstsort": {"fair_p_range"},
    "plrank": {"max_iter"},
    "multinomial-fair": {"fair_p_range", "fair_alpha_range", "max_iter"},
}
DPR_OPTIONS = ("encoder", "dpr_loss", "steps", "batch_size", "max_train_items", "max_test_items")
RANKING_COLUMNS = {"query": "--query", "group": "--group", "judgment": "--judgment", "item": "--item"}


def _method(values):
    from fairltr.workflows.sweep_plugins import get_sweep_method

    return get_sweep_method(values["method"])


def _methods_with(test) -> str:
    from fairltr.workflows.sweep_plugins import sweep_methods

    return ", ".join(m.name for m in sweep_methods() if test(m)) or "none"


def _method_option(name: str, label: str) -> Rule:
    """A trial keyword the registry declares per method (:attr:`SweepMethod.options`)."""
    return used_when(lambda v: name in _method(v).options,
                     lambda v: f"{label} applies to --method {_methods_with(lambda m: name in m.options)}; "
                               f"{v['method']} does not take it")


def _builtin_read(name: str, label: str, what: str) -> Rule:
    def reads(method) -> bool:
        return name in BUILTIN_METHOD_READS.get(method.name, {name})

    return used_when(lambda v: reads(_method(v)),
                     lambda v: f"{label} {what}: it applies to --method {_methods_with(reads)}, not {v['method']}")


def _ranking_data(label: str) -> Rule:
    return used_when(lambda v: _method(v).data == "ranking",
                     lambda v: f"{label} applies to ranking methods; --method {v['method']} reads a parallel-query "
                               "folder")


def _uses_loss(method) -> bool:
    return method.ranking is not None and method.ranking.uses_loss


def _register_best(values) -> str | None:
    if _method(values).ranking is None:
        return (f"--register-best registers a ranking method's best trade-off (DELTR, LambdaMART or a re-ranker); "
                f"--method {values['method']} is not one")
    return "--register-best registers in MLflow: drop --no-mlflow" if values["no_mlflow"] else None


def _reading_rules() -> dict[str, Rule]:
    files = reading_rules(lambda v: (v["train"], v["test"]), fmt=None)
    return {"na_values": lambda v: _ranking_data("--na-values")(v) or files["na_values"](v),
            "duplicates": lambda v: _ranking_data("--duplicate-rows")(v) or files["duplicates"](v)}


SWEEP_RULES = {
    **{name: _method_option(name, "--" + name.replace("_", "-")) for name in DPR_OPTIONS},
    "loss": used_when(lambda v: _uses_loss(_method(v)),
                      lambda v: f"--loss is the ranking loss of --method {_methods_with(_uses_loss)}; "
                                f"{v['method']} does not train with it"),
    "fair_p_range": _builtin_read("fair_p_range", "--fair-p-range", "is FA*IR's target-share range"),
    "fair_alpha_range": _builtin_read("fair_alpha_range", "--fair-alpha-range", "is FA*IR's significance range"),
    "max_iter": _builtin_read("max_iter", "--max-iter", "is DELTR's (or PLRank's) optimiser iterations"),
    **{name: _ranking_data(label) for name, label in RANKING_COLUMNS.items()},
    **_reading_rules(),
    "register_best": _register_best,
    "population_size": used_when(lambda v: v["sampler"] == "nsga2",
                                 lambda v: f"--population-size is NSGA-II's; --sampler {v['sampler']} has none"),
    "heartbeat_interval": used_when(lambda v: not (v["storage"] or "").startswith("journal:"),
                                    "--heartbeat-interval is the heartbeat of database storages; a journal: storage "
                                    "has none"),
    **tracking_rules("no_mlflow", flag="--no-mlflow"),
    "tracking_uri": used_when(lambda v: not v["no_mlflow"], "--tracking-uri names the MLflow store; nothing is "
                                                            "logged with --no-mlflow"),
}
"""When each option of ``sweep`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("sweep")
@click.option("--method", required=True, type=DeclaredChoice(_sweep_method_names),
              help="a registered sweep method (docs/sweeps.md lists what each searches; dpr: --train/--test are a "
                   "parallel-query folder)")
@click.option("--train", "train", required=True, type=click.Path(), help="training ranking file (dpr: data folder)")
@click.option("--test", "test", required=True, type=click.Path(), help="test ranking file, the objectives are measured on it (dpr: data folder)")
@click.option("--trials", "n_trials", required=True, type=int,
              help="COMPLETE trials the study must hold (shared by all workers; reruns resume)")
@click.option("--study", required=True, help="study name (rerun the same command to resume)")
@click.option("--storage", default=None,
              help="sqlite:///F, postgresql://U:P@H/DB or journal:FILE [default: sqlite in --out]")
@click.option("--objectives", default=None,
              help="two metric names with optional :max/:min [default: the method's, "
                   "kendall_tau:max,exposure_disparity:min for ranking methods, dpr: mrr_at_100:max,mrc_at_5:max]")
@click.option("--constraint", "constraints", multiple=True, help='e.g. "kendall_tau>=0.2" (repeatable)')
@click.option("--sampler", default="nsga2", type=click.Choice(["nsga2", "tpe", "gp"]), show_default=True)
@click.option("--seed", default=0, show_default=True, type=int, help="sampler and model seed")
@click.option("--out", default="sweep-out", show_default=True, type=click.Path(file_okay=False),
              help="folder for the front CSV/JSON, plot and the default storage")
@click.option("--compare-with", "compare_with", multiple=True,
              help="other study in the same storage to overlay and compare (repeatable)")
@click.option("--reference", default=None,
              help='hypervolume reference point, e.g. "kendall_tau=0,exposure_gap=0.05" [default: observed nadir + 10% of the range]')
@click.option("--tracking-uri", default=None, help="MLflow tracking URI [default: MLFLOW_TRACKING_URI or ./mlflow.db]")
@click.option("--experiment", default="fairltr-sweep", show_default=True, help="MLflow experiment")
@click.option("--no-mlflow", is_flag=True, help="do not log to MLflow")
@click.option("--loss", default="exposure_hinge", show_default=True, help="DELTR: registered ranking loss")
@click.option("--fair-p-range", default=None, help="FA*IR: LOW,HIGH for fair_p [default: around the protected share]")
@click.option("--fair-alpha-range", default="0.01,0.5", show_default=True, help="FA*IR: LOW,HIGH for fair_alpha (log)")
@click.option("--max-iter", default=None, type=int, help="DELTR optimiser iterations [default: DELTR's]")
@click.option("--population-size", default=None, type=int, help="NSGA-II population [default: trials/5 in 4..50]")
@click.option("--heartbeat-interval", default=10, show_default=True, type=int, help="RDB heartbeat seconds")
@click.option("--grace-period", default=30, show_default=True, type=int,
              help="seconds without heartbeat before a RUNNING trial is failed and retried")
@click.option("--encoder", default=None, help="dpr: Hugging Face model folder [default: all-MiniLM-L6-v2 package]")
@click.option("--dpr-loss", default="lakda_kl", show_default=True, help="dpr: registered retrieval loss")
@click.option("--steps", default=100, show_default=True, type=int, help="dpr: training steps per trial")
@click.option("--batch-size", default=32, show_default=True, type=int, help="dpr: batch size")
@click.option("--max-train-items", default=None, type=int, help="dpr: seeded sample of training items")
@click.option("--max-test-items", default=None, type=int, help="dpr: seeded sample of test items")
@click.option("--no-progress", is_flag=True, help="no progress bar")
@click.option("--query", default=DEFAULT_COLUMNS.query, show_default=True, help="ranking methods: query id column")
@group_option("ranking methods: group attribute column, repeatable (--group race --group sex); the first one "
              "trains DELTR, all of them are audited (objectives impact_ratio_at_10:max, exposure_ratio_worst:max)")
@click.option("--judgment", default=DEFAULT_COLUMNS.judgment, show_default=True, help="ranking methods: judgment column")
@click.option("--item", default=None, help="ranking methods: candidate id column (unique within a query; never a feature)")
@stack(reading_options())
@click.option("--register-best", default=None, metavar="NAME",
              help="ranking methods: retrain the best trade-off on the training data and register it as one model "
                   "under NAME; a post-processing method's re-ranker becomes the model's serving policy "
                   "(give it to one worker)")
@option_rules(SWEEP_RULES, always=("method", "train", "test", "n_trials", "study", "storage", "objectives",
                                   "constraints", "sampler", "seed", "out", "compare_with", "reference", "no_mlflow",
                                   "grace_period", "no_progress"))
def sweep(method, train, test, n_trials, study, storage, objectives, constraints, sampler, seed, out,
          compare_with, reference, tracking_uri, experiment, no_mlflow, loss, fair_p_range, fair_alpha_range,
          max_iter, population_size, heartbeat_interval, grace_period, encoder, dpr_loss, steps, batch_size,
          max_train_items, max_test_items, no_progress, query, group, judgment, item, register_best) -> None:
    """Multi-objective Pareto sweep (Optuna) logged to MLflow; N workers may share one study."""
    from fairltr.workflows import run_sweep_job
    from fairltr.workflows import SweepConfig
    from fairltr.workflows.sweep import one_torch_thread

    from fairltr.workflows.sweep_plugins import get_sweep_method

    one_torch_thread()
    options = get_sweep_method(method).method_options(dict(
        dpr_loss=dpr_loss, steps=steps, batch_size=batch_size, max_train_items=max_train_items,
        max_test_items=max_test_items, encoder=encoder))
    cfg = SweepConfig(
        method=method, train=train, test=test, n_trials=n_trials, study=study, storage=storage,
        objectives=objectives, constraints=tuple(constraints), sampler=sampler, seed=seed, out=out,
        compare_with=tuple(compare_with), reference=reference, tracking_uri=tracking_uri,
        experiment=experiment, mlflow=not no_mlflow, loss=loss, p_range=_pair(fair_p_range, "--fair-p-range"),
        alpha_range=_pair(fair_alpha_range, "--fair-alpha-range"), max_iter=max_iter,
        population_size=population_size, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
        progress=not no_progress, method_options=options, register_best=register_best,
    )
    columns = ranking_columns(query, group, judgment, item)
    result = run_sweep_job(cfg, echo=click.echo, columns=columns, reading=read_settings())
    for f in result.files:
        click.echo(f"wrote {f}")
    if result.registered is not None:
        name, version, policy = result.registered
        click.echo(f"registered the best trade-off as {name!r} version {version}"
                   + (f", served with {policy}" if policy else ""))
