"""Options shared by the data commands, and their translation into workflow inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import click

from fairltr.columns import DEFAULT_COLUMNS

__all__ = ["DeclaredChoice", "data_options", "ranking_source", "ranking_columns", "group_option", "parse_ks", "tracking_options",
           "tracking_from", "audit_options", "audit_config", "conventions_options", "conventions_of", "wide_option", "ci_option", "train_test_options",
           "train_test_sources", "feature_options", "parse_features", "fair_preprocess_options", "fair_preprocess_from",
           "ranker_output_options", "reading_options", "read_settings", "stack"]


class DeclaredChoice(click.Choice):
    """A ``click.Choice`` whose choices are read from the declarations each time the command line
    is parsed (``names()``, e.g. the registered re-rankers or sweep methods), so that a plugin's
    name is a choice without an edit to the CLI."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        super().__init__([], case_sensitive=True)

    @property
    def choices(self):  # type: ignore[override]
        return tuple(self._names())

    @choices.setter
    def choices(self, value) -> None:  # click's __init__ assigns it; the declarations are the source
        pass

INPUT_FORMATS = ["auto", "deltr", "letor", "csv", "parquet"]
GROUP_HELP = ("group attribute column, repeatable: --group race --group sex (integer or string categories; the first "
              "one is the group training and the binary metrics use, 0 = non-protected)")


def stack(options: Sequence[Callable]) -> Callable:
    """One decorator applying ``options`` so that ``--help`` lists them in the given order."""

    def decorate(f: Callable) -> Callable:
        for opt in reversed(options):
            f = opt(f)
        return f

    return decorate


READ_META = "fairltr.read_options"
"""Where the reading options (``--na-values``, ``--duplicate-rows``) wait in the click context for
:func:`ranking_source` (they apply to every ranking file a command reads)."""


def _store_read_option(ctx: click.Context, param: click.Parameter, value):
    ctx.meta.setdefault(READ_META, {})[param.name] = value
    return value


def reading_options() -> list:
    """``--na-values`` (repeatable) and ``--duplicate-rows``: how every ranking file of the command is read."""
    return [
        click.option("--na-values", "na_values", multiple=True, expose_value=False, callback=_store_read_option,
                     help="CSV cells that mean 'missing', repeatable (default: pandas' markers, which include NA and "
                          "N/A); --na-values '' keeps a category written NA"),
        click.option("--duplicate-rows", "duplicates", type=click.Choice(["refuse", "keep", "once"]),
                     default="refuse", show_default=True, expose_value=False, callback=_store_read_option,
                     help="rows repeating another row of their query in every column, without --item: refuse, keep "
                          "(distinct candidates with equal values), or count each once"),
    ]


def read_settings() -> dict:
    """``{"na_values", "duplicates"}`` of the running command (defaults outside a command)."""
    ctx = click.get_current_context(silent=True)
    meta = (ctx.meta.get(READ_META) if ctx is not None else None) or {}
    na = meta.get("na_values") or None
    return {"na_values": tuple(na) if na else None, "duplicates": meta.get("duplicates") or "refuse"}


def data_options(format_help: str = "input format (auto: by suffix / first line)", item: bool = True, *,
                 group_help: str = GROUP_HELP, judgment_help: str = "judgment column (higher is better)",
                 item_help: str = "item (document) id column: never a feature; duplicates per query are an error"
                 ) -> Callable:
    """Decorator adding ``--format``, ``--query``, ``--group``, ``--judgment`` (and ``--item``), and
    the reading options ``--na-values`` / ``--duplicate-rows``: the column and format options of
    every command that reads a ranking table."""
    options = [
        click.option("--format", "fmt", type=click.Choice(INPUT_FORMATS), default="auto", show_default=True,
                     help=format_help),
        click.option("--query", default=DEFAULT_COLUMNS.query, show_default=True, help="query id column"),
        group_option(group_help),
        click.option("--judgment", default=DEFAULT_COLUMNS.judgment, show_default=True, help=judgment_help),
    ]
    if item:
        options.append(click.option("--item", default=None, help=item_help))
    return stack(options + reading_options())


def train_test_options(train_help: str = "training ranking file") -> Callable:
    """``--train PATH`` (required) and ``--test PATH`` (metrics + predictions) of the train commands."""
    return stack([
        click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False), help=train_help),
        click.option("--test", "test_path", type=click.Path(dir_okay=False),
                     help="test ranking file (metrics + predictions)"),
    ])


def train_test_sources(train_path: str, test_path: str | None, fmt: str, query: str, group: Sequence[str],
                       judgment: str, item: str | None):
    """The train and (None without ``--test``) test :class:`~fairltr.workflows.options.RankingSource`."""
    train = ranking_source(train_path, fmt, query, group, judgment, item)
    return train, ranking_source(test_path, fmt, query, group, judgment, item) if test_path else None


def feature_options() -> Callable:
    """``--colorblind`` and ``--features A,B`` (the model's inputs; see :func:`parse_features`)."""
    return stack([
        click.option("--colorblind", is_flag=True, help="drop the group column from the features"),
        click.option("--features", help="comma-separated feature columns (default: every column but "
                                        "query/judgment/item)"),
    ])


def parse_features(text: str | None) -> tuple[str, ...] | None:
    """``"a, b"`` -> ("a", "b"); None or empty: None (every numeric column)."""
    return tuple(f.strip() for f in text.split(",") if f.strip()) if text else None


def fair_preprocess_options() -> Callable:
    """``--fair-preprocess P`` and ``--fair-alpha A``: FA*IR pre-processing of the training lists."""
    return stack([
        click.option("--fair-preprocess", "fair_p", type=float, default=None,
                     help="FA*IR pre-processing: re-rank every training list with target proportion P first"),
        click.option("--fair-alpha", type=float, default=0.1, show_default=True,
                     help="FA*IR significance for --fair-preprocess"),
    ])


def fair_preprocess_from(fair_p: float | None, fair_alpha: float):
    """The :class:`~fairltr.workflows.FairParams` of the pre-processing options (None without ``--fair-preprocess``)."""
    from fairltr.workflows import FairParams

    return FairParams(fair_p, fair_alpha) if fair_p is not None else None


def ranker_output_options(default_out: str, model_format: bool = True) -> Callable:
    """``--out DIR`` (default ``default_out``) and, for DELTR-format models, ``--model-format``."""
    options = [click.option("--out", "out_dir", type=click.Path(file_okay=False), default=default_out,
                            show_default=True)]
    if model_format:
        options.append(click.option("--model-format", type=click.Choice(["json", "safetensors"]), default="json",
                                    show_default=True))
    return stack(options)


def group_option(help_text: str = GROUP_HELP) -> Callable:
    """``--group COL``, repeatable; the value is a tuple of column names (default: ``protected``)."""
    return click.option("--group", "group", multiple=True, default=(DEFAULT_COLUMNS.group,), show_default=True,
                        help=help_text)


def ranking_columns(query: str, group: str | Sequence[str] | None, judgment: str | None, item: str | None = None):
    """THE place where the CLI's column options become a :class:`~fairltr.columns.RankingColumns`:
    ``--group`` given once is that column, given several times a tuple of attributes (in the
    order given; duplicates are an error)."""
    from fairltr.columns import RankingColumns

    if group is None or isinstance(group, str):
        groups: tuple[str, ...] = () if group is None else (group,)
    else:
        groups = tuple(group)
    dupes = sorted({g for g in groups if groups.count(g) > 1})
    if dupes:
        raise click.BadParameter(f"group column {dupes[0]!r} given twice", param_hint="--group")
    value: str | tuple[str, ...] | None = None if not groups else groups[0] if len(groups) == 1 else groups
    return RankingColumns(query, value, judgment, item or None)


def ranking_source(path: str | Path, fmt: str, query: str, group: str | Sequence[str], judgment: str,
                   item: str | None = None):
    """A :class:`~fairltr.workflows.options.RankingSource` from the data options (and the
    command's reading options, :func:`read_settings`)."""
    from fairltr.workflows.options import RankingSource

    return RankingSource(Path(path), fmt, ranking_columns(query, group, judgment, item), **read_settings())


def parse_ks(text: str, option: str = "--k") -> tuple[int, ...]:
    """``"1,5,10"`` -> (1, 5, 10); every cut-off an integer >= 1."""
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"must be comma-separated integers, got {text!r}", param_hint=option) from None
    if not ks or any(k < 1 for k in ks):
        raise click.BadParameter(f"cut-offs must be integers >= 1, got {text!r}", param_hint=option)
    return ks


SERVE_META = "fairltr.serving_options"
"""Where ``--serve-overrides`` and ``--decision-log`` wait in the click context for
:func:`tracking_from` (not passed to the command function, whose signature stays as it was)."""


def _store_serving_option(ctx: click.Context, param: click.Parameter, value):
    ctx.meta.setdefault(SERVE_META, {})[param.name] = value
    return value


def tracking_options(experiment: str, register: bool = False, serve_rerank: bool = False) -> Callable:
    """Decorator adding ``--experiment``, ``--no-track`` (and ``--register NAME``; and, for
    rankers, ``--serve-rerank POLICY``, ``--serve-overrides FIELDS`` and ``--decision-log URI``,
    the serving settings recorded with the logged model)."""
    options = [
        click.option("--experiment", default=experiment, show_default=True, help="MLflow experiment"),
        click.option("--no-track", is_flag=True, help="do not log to MLflow"),
    ]
    if register:
        options.append(click.option("--register", default=None,
                                    help="register the model in the MLflow registry under this name"))
    if serve_rerank:
        options.append(click.option("--serve-rerank", "serve_rerank", default=None, metavar="POLICY",
                                    help="post-processing the logged model applies when served, e.g. "
                                         "'fair:p=0.3,alpha=0.1[,k=10]' (FA*IR), 'fair:alpha=0.1,k=10,p=1=0.3,2=0.15' "
                                         "(multinomial FA*IR: the share list comes last) or 'detconstsort:k=10'"))
        options.append(click.option("--serve-overrides", "serve_overrides", default=None, metavar="FIELDS",
                                    expose_value=False, callback=_store_serving_option,
                                    help="request params that may change the served policy: none, all, or some of "
                                         "rerank,p,alpha,adjust,k,target [default: none with --serve-rerank, "
                                         "else all]"))
        options.append(click.option("--decision-log", "decision_log", default=None, metavar="URI",
                                    expose_value=False, callback=_store_serving_option,
                                    help="where the served model logs every served candidate: a folder (Parquet "
                                         "shards) or postgresql://user@host/db?table=NAME (no password; "
                                         "FAIRLTR_DECISION_LOG overrides it where the model is served)"))
    return stack(options)


def tracking_from(experiment: str, no_track: bool, register: str | None = None, run_name: str | None = None,
                  serve_rerank: str | None = None, serve_overrides: str | None = None,
                  decision_log: str | None = None, serve_sample: bool = False):
    """The :class:`~fairltr.workflows.options.TrackingOptions` of the tracking options; the
    serving settings not given here come from ``--serve-overrides`` / ``--decision-log``."""
    from fairltr.workflows.options import TrackingOptions

    ctx = click.get_current_context(silent=True)
    meta = (ctx.meta.get(SERVE_META) if ctx is not None else None) or {}
    return TrackingOptions(enabled=not no_track, experiment=experiment, register=register or None, run_name=run_name,
                           serve_rerank=serve_rerank,
                           serve_overrides=serve_overrides if serve_overrides is not None else meta.get("serve_overrides"),
                           decision_log=decision_log if decision_log is not None else meta.get("decision_log"),
                           serve_sample=serve_sample)


def ci_option(default: float = 0.0, what: str = "the metrics") -> Callable:
    """``--ci LEVEL``: confidence level of the bootstrap intervals (0 = no intervals)."""
    return click.option("--ci", "ci", type=float, default=default, show_default=True,
                        help=f"confidence level of bootstrap intervals on {what}, e.g. 0.95 (0 = none); a cluster "
                             "bootstrap over queries (over candidates below 30 queries)")


def audit_options(ci_default: float = 0.0, what: str = "the metrics") -> Callable:
    """Decorator adding ``--ci``, ``--min-category-share``, ``--n-boot`` and ``--ci-seed``."""
    options = [
        ci_option(ci_default, what),
        click.option("--min-category-share", type=float, default=0.02, show_default=True,
                     help="categories with a smaller share of the candidates are reported, marked excluded and "
                          "left out of the worst-case figures"),
        click.option("--n-boot", type=int, default=2000, show_default=True, help="bootstrap resamples (with --ci)"),
        click.option("--ci-seed", type=int, default=0, show_default=True, help="bootstrap seed (with --ci)"),
    ]
    return stack(options)


def audit_config(k: int, ci: float, min_category_share: float, n_boot: int, ci_seed: int):
    """The :class:`~fairltr.metrics.AuditConfig` of the audit options (checked: one-line errors)."""
    from fairltr.workflows.audit import make_audit_config

    return make_audit_config(k=k, ci=ci, min_category_share=min_category_share, n_boot=n_boot, seed=ci_seed)


def conventions_options() -> Callable:
    """``--empty-queries skip|zero`` and ``--linear-ndcg``: the relevance metrics' conventions
    (:mod:`fairltr.metrics.conventions`; trec_eval's are ``--empty-queries zero --linear-ndcg``)."""
    return stack([
        click.option("--empty-queries", type=click.Choice(["skip", "zero"]), default="skip", show_default=True,
                     help="a query without a relevant item: skip = left out of the nDCG/MRR/recall means; zero = "
                          "counted as 0 (trec_eval's, ranx's and ir-measures' convention)"),
        click.option("--linear-ndcg", is_flag=True,
                     help="also report ndcg_linear_at_<k>: nDCG with linear gains max(judgment, 0), trec_eval's"),
    ])


def conventions_of(empty_queries: str, linear_ndcg: bool):
    """The :class:`~fairltr.metrics.conventions.RelevanceConventions` of :func:`conventions_options`."""
    from fairltr.workflows import RelevanceConventions

    return RelevanceConventions(empty_queries=empty_queries, linear_ndcg=bool(linear_ndcg))


def wide_option() -> Callable:
    """``--wide``: print every column of the table (default: what fits in 120 characters)."""
    return click.option("--wide", is_flag=True, help="print every column (default: the table fits 120 characters)")
