"""The registry room of the MLflow adapter: fairness-gated promotion of a registered model to an
alias, one job per module.

* :mod:`~fairltr.tracking.model_registry.promotion`: :func:`promote`, the entry point (arguments,
  the evaluation's config, the promotion run);
* :mod:`~fairltr.tracking.model_registry.sources`: where the metrics come from (a version evaluated on
  the promotion data, or its training run's metrics; the audit table; the alias lookup);
* :mod:`~fairltr.tracking.model_registry.checks`: the gates of a candidate against a champion
  (confidence mode, per-category detail);
* :mod:`~fairltr.tracking.model_registry.compare_and_set`: the race for the alias under the lock;
* :mod:`~fairltr.tracking.model_registry.decision`: the decision record and how it is written;
* :mod:`~fairltr.tracking.model_registry.lock`: the per-model lock the tracking store enforces;
* :mod:`~fairltr.tracking.model_registry.alias_check`: does an alias point at a version a promotion
  accepted, with the files it accepted (``fairltr verify-alias``);
* :mod:`~fairltr.tracking.model_registry.alias_record`: a check's FAIL written to the registry, and
  moving an alias back;
* :mod:`~fairltr.tracking.model_registry.webhook_signature` and
  :mod:`~fairltr.tracking.model_registry.webhook_receiver`: MLflow's registry webhooks received, their
  HMAC signature checked, every alias event checked (``fairltr webhook-receiver``).

The gate grammar itself is the core's (:mod:`fairltr.gates`); its names are re-exported here.
Nothing here imports MLflow at import time.
"""

from fairltr.gates import Gate, GateResult, check_gates, parse_gate
from fairltr.tracking.model_registry.alias_check import AliasCheck, check_alias, check_all_aliases, check_version
from fairltr.tracking.model_registry.alias_record import record_alias_check, revert_alias
from fairltr.tracking.model_registry.decision import (
    DECISION_ARTIFACT, EXIT_CODES, TAG_LIMIT, TAG_PREFIX, VERDICT_MARK, PromotionDecision, decision_record,
    json_within, with_verdict,
)
from fairltr.tracking.model_registry.lock import LockTimeout, acquire_lock
from fairltr.tracking.model_registry.promotion import promote
from fairltr.tracking.model_registry.sources import current_champion, evaluate_model_uri, retrieval_cutoffs, version_metrics
from fairltr.tracking.model_registry.webhook_receiver import AliasEventReceiver, ReceiverSettings, register_webhook
from fairltr.tracking.model_registry.webhook_signature import check_delivery

__all__ = [
    "Gate", "GateResult", "parse_gate", "check_gates", "PromotionDecision", "promote", "evaluate_model_uri",
    "version_metrics", "current_champion", "retrieval_cutoffs", "TAG_PREFIX", "EXIT_CODES", "TAG_LIMIT",
    "json_within", "decision_record", "DECISION_ARTIFACT", "VERDICT_MARK", "with_verdict", "acquire_lock",
    "LockTimeout", "AliasCheck", "check_alias", "check_version", "check_all_aliases", "record_alias_check",
    "revert_alias", "AliasEventReceiver", "ReceiverSettings", "register_webhook", "check_delivery",
]
