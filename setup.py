"""Package layout that pyproject.toml cannot express: data folders mapped into the package.

``data/`` (cards, seed panels, suites) and ``configs/`` (Hydra configs) stay at the top of
the checkout where readers look for them, and ship inside the wheel as
``ragen_bench.data.frozen`` and ``ragen_bench.data.configs`` (read with importlib.resources).
Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

DATA_PACKAGES = {"ragen_bench.data.frozen": "data", "ragen_bench.data.configs": "configs"}

setup(
    packages=find_packages(include=["ragen_bench", "ragen_bench.*"]) + list(DATA_PACKAGES),
    package_dir=DATA_PACKAGES,
    package_data={"ragen_bench.data.frozen": ["**/*.json", "**/*.md", "textworld/games/*/*.gz"], "ragen_bench.data.configs": ["**/*.yaml"]},
)
