"""veRL 0.9 integration: StarPO on veRL's V1 trainer, Ray and vLLM/SGLang, without forking veRL.

The only place in ragen-bench that imports verl (tests/test_verl_boundary.py holds that line).
It lives in its own virtualenv (``scripts/setup_verl_venv.sh``: verl without extras, torch CPU
for the tests; a GPU machine installs verl's ``vllm`` or ``sglang`` extra instead).

* :mod:`.agent_loop`: the agent loop that plays a ``ChatEpisode`` through veRL's server;
* :mod:`.sampler`: the StarPO-S filter as a V1 custom sampler;
* :mod:`.trainer`: veRL's V1 sync trainer with StarPO's advantage hooks (:mod:`.bi_level`'s
  bi-level GAE, ``actor.filter_loss_scaling``);
* :mod:`.bi_level`: bi-level GAE on veRL's advantage-step tensors;
* :mod:`.data`: the Parquet seed files and the agent-loop file a run reads;
* :mod:`.recipe`: train config -> ``verl.trainer.main_ppo`` overrides;
* :mod:`.job`: the overrides composed with veRL's config and checked (dry run), the run folder, the launch.

:func:`main` is what ``ragen-bench train backend=verl [--dry-run]`` calls.  Importing this
package imports neither verl nor torch; the submodules :mod:`.agent_loop`, :mod:`.sampler` and
:mod:`.trainer` import verl.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing this package loads no config module
    from ragen_bench.train.config import TrainConfig

INSTALL_HINT = (
    "backend=verl needs veRL 0.9 in its own virtualenv: run scripts/setup_verl_venv.sh, then "
    "`.venv-verl/bin/ragen-bench train backend=verl ...` (GPU machines: pip install 'verl[vllm]>=0.9,<0.10')"
)


def main(config: TrainConfig, dry_run: bool, extra: Sequence[str] = ()) -> int:
    """Print the resolved veRL config (``dry_run``) or launch the training; the exit code.

    ``config`` is a checked train config (``ragen-bench train``'s); ``extra`` holds veRL ``key=value``
    overrides that replace or add to the recipe's.  A config the recipe cannot express is one
    line on stderr and exit code 2.
    """
    try:
        import verl  # noqa: F401
    except ImportError:
        print(f"ragen-bench train: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from ragen_bench.integrations.verl import job
    from ragen_bench.integrations.verl.recipe import RecipeError

    try:
        if dry_run:
            print(job.dry_run(config, extra))
            return 0
        return job.launch(config, extra)
    except RecipeError as error:
        print(f"ragen-bench train: {error}", file=sys.stderr)
        return 2
