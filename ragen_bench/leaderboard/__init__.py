"""The leaderboard: submissions verified by replay, then tables, plots and one static page.

* :mod:`.files` -- reading a submission folder as bounded, plain data;
* :mod:`.schema` -- ``submission.json``'s typed model and JSON Schema;
* :mod:`.verify` -- every check of ``ragen-bench leaderboard verify``, replay included;
* :mod:`.stats` -- paired comparison of two entries (McNemar, paired bootstrap);
* :mod:`.tables` -- the tables as shown (columns, cells, row order), which both renderings read;
* :mod:`.figures` -- the plots, as reproducible PNG bytes;
* :mod:`.build` -- ``leaderboard/README.md``, ``leaderboard.csv``, plots; :mod:`.page` -- ``index.html``.

Importing this package is light: pydantic, pandas and matplotlib are imported by the
modules (and functions) that need them.  Guide: ``docs/leaderboard.md``.
"""

from ragen_bench.leaderboard.errors import LeaderboardError

__all__ = ["LeaderboardError"]
