"""Bridges to engines users already run (Ray, veRL, TRL, SkyRL-gym); the only layer that imports them.

Each subpackage imports its engine at import time, so import one only when its feature
is asked for; ``import ragen_bench`` never imports this package.
"""
