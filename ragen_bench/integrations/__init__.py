"""Bridges to engines users already run (Ray, veRL, TRL, SkyRL-gym, OpenEnv, verifiers); the only layer importing them.

The veRL and Ray subpackages import their engine at import time, so import one only when its
feature is asked for; in ``openenv/`` only ``server`` and ``client`` do (the CLI reads ``serve``'s
arguments from ``openenv/command.py``).  ``import ragen_bench`` never imports this package.
"""
