"""The plugin's registry rows: loaded by ``import ragen_bench``, so it imports nothing heavy."""

from ragen_bench.registry import EnvEntry


def entries() -> list[EnvEntry]:
    # Ids live in the namespace named by the entry point ("demo"); the class is a string,
    # imported only when an id is made.
    return [
        EnvEntry(
            "demo/CoinGuess-v0",
            "demo_coin",
            "ragen_demo_plugin.env:CoinGuessEnv",
            dict(sides=2),
            description="Guess which face a seeded coin shows.",
        ),
    ]
