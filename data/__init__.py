"""Frozen benchmark data, not code: shipped inside the package as ``ragen_bench.data.frozen``.

This file only makes the folder importable as a resource package (see ``setup.py``).
"""
