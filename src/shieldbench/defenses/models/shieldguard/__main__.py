"""``python -m shieldbench.defenses.models.shieldguard train OUT [--steps N] [--fold NAME]``.

Retrains shieldguard from the installed data, ``../shared/datasets`` (or
``SHIELDGUARD_DATA``) and the written data; CPU only, seeded. The shipped model
was made with the defaults (see its ``card.json``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shieldbench.errors import ShieldbenchError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shieldbench.defenses.models.shieldguard")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("train", help="fine-tune, export to int8 ONNX, calibrate, write card")
    cmd.add_argument("out", type=Path)
    cmd.add_argument("--steps", type=int, default=900)
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("--fold", default=None, help="hold out one fold of sources (evaluation)")
    cmd.add_argument("--threads", type=int, default=2)
    cmd.add_argument("--max-len", type=int, default=128)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        from shieldbench.defenses.models.shieldguard._train import TrainConfig, train
    except ImportError as exc:
        print(
            f"error: training needs torch, transformers, onnx and onnxruntime ({exc});"
            " pip install 'shieldbench[shieldguard-train]'",
            file=sys.stderr,
        )
        return 2
    try:
        train(
            args.out,
            TrainConfig(
                steps=args.steps,
                seed=args.seed,
                fold=args.fold,
                threads=args.threads,
                max_len=args.max_len,
            ),
        )
    except ShieldbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
