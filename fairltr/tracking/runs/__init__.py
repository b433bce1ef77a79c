"""Runs and configuration: the tracking URI and experiment (``config``), the life of a run a
fairltr job opens (``life_cycle``), ends that could not be recorded (``pending_ends``) and the
credential redaction of everything printed (``redaction``). Imports no other part of the adapter.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
