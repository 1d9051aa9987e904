"""TRL's GRPOTrainer on RAGEN/Sokoban-6x6-v0 through ragen_bench.integrations.trl (README.md here).

Usage: python baselines/trl-sokoban-grpo/train.py START OUT [--steps N]
START is a model folder (cpu-sokoban-grpo's warm start); the trained model is saved to OUT/model.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ENV = "RAGEN/Sokoban-6x6-v0"
# cpu-sokoban-grpo's attempt 9: the no-think template, a format penalty of -1 (RAGEN's -0.1 lets the
# format drift), 24 new tokens a reply; the KL term to the start is TRL's beta.
CHAT = {"think": False, "format_penalty": -1.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("start")
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--groups", type=int, default=16, help="seeds per step")
    parser.add_argument("--group-size", type=int, default=8, help="episodes per seed (TRL's num_generations)")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--beta", type=float, default=0.05)
    args = parser.parse_args()

    import torch
    from trl import GRPOConfig, GRPOTrainer

    from ragen_bench.agents.local_models import load_model
    from ragen_bench.integrations.trl import episode_reward, make_rollout_func, panel_dataset

    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    model, tokenizer = load_model(args.start)
    tokenizer.padding_side = "left"
    # One decontaminated train seed per group, each used once (no test or val level among them).
    dataset = panel_dataset(ENV, "train", limit=args.steps * args.groups, chat=CHAT)
    config = GRPOConfig(
        output_dir=str(args.out / "trl"), use_cpu=True, bf16=False, seed=0, max_steps=args.steps,
        per_device_train_batch_size=args.groups * args.group_size, num_generations=args.group_size,
        learning_rate=args.lr, beta=args.beta, temperature=1.0,
        max_completion_length=512,  # above a whole episode's 5 replies and 4 observations
        logging_steps=1, save_strategy="no", report_to="none",
    )
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=episode_reward, args=config,
                          train_dataset=dataset, rollout_func=make_rollout_func(ENV, chat=CHAT, max_new_tokens=24))
    started = time.perf_counter()
    trainer.train()
    print(f"trained {args.steps} steps in {time.perf_counter() - started:.0f} s")
    trainer.save_model(str(args.out / "model"))
    tokenizer.save_pretrained(str(args.out / "model"))


if __name__ == "__main__":
    main()
