"""Runs and configuration: the tracking URI and experiment (``config``), the life of a run a
fairltr job opens (``life_cycle``), ends that could not be recorded (``pending_ends``), the
credential redaction of everything printed (``redaction``) and the fairltr command's guard that
keeps a Ctrl-C out of a local store's transactions (``store_interrupts``). Imports no other part of the adapter.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
