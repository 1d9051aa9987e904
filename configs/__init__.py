"""Hydra configs, shipped inside the package as ``ragen_bench.data.configs``.

This file only makes the folder importable as a resource package (see ``setup.py``).
"""
