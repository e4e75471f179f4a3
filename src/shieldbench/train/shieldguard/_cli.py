"""``shieldbench train shieldguard OUT | --prepare FILE``: retrain shieldguard.

``OUT`` retrains shieldguard from the installed data, ``../shared/datasets`` (or
``SHIELDGUARD_DATA``) and the written banks (``train/data/shieldguard/`` of a source
checkout, or ``--data-dir``): seeded, CPU by default. The shipped model's card says
how it was made. ``--prepare FILE`` writes the assembled data to one file instead,
so that fitting can happen elsewhere (``_fit.py``, e.g. on a GPU) and
``OUT --data FILE --weights W`` finishes it here.

The options are parsed here with :mod:`argparse` (the recipe's options are
:func:`._fit.add_recipe_arguments`, shared with the stand-alone ``_fit.py``), so the
command line's ``train shieldguard`` passes its arguments through unparsed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from shieldbench.errors import ShieldbenchError
from shieldbench.train.shieldguard._fit import TrainConfig, add_recipe_arguments, config_from
from shieldbench.train.shieldguard._paths import use_data_dir

__all__ = ["NEEDS", "PROG", "main", "parser"]

PROG = "shieldbench train shieldguard"
NEEDS = (
    "training needs torch, transformers, onnx and onnxruntime ({});"
    " pip install 'shieldbench[shieldguard-train]'"
)


def parser() -> argparse.ArgumentParser:
    """The options of ``shieldbench train shieldguard`` (``--help`` prints them)."""
    cmd = argparse.ArgumentParser(
        prog=PROG,
        description="Fine-tune shieldguard, export it to 8-bit ONNX, calibrate it, write its"
        " card into OUT; or, with --prepare FILE, only assemble its training data.",
    )
    cmd.add_argument("out", type=Path, nargs="?", help="folder for the trained model")
    cmd.add_argument(
        "--prepare",
        type=Path,
        default=None,
        metavar="FILE",
        help="only assemble the training data into FILE (.jsonl.gz), for _fit.py elsewhere",
    )
    cmd.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder of the written banks (default: train/data/shieldguard of the checkout)",
    )
    cmd.add_argument("--fold", default=None, help="hold out one fold of sources (evaluation)")
    add_recipe_arguments(cmd)
    cmd.add_argument(
        "--no-eval", action="store_true", help="skip the card's metrics on the shared sets"
    )
    cmd.add_argument("--data", type=Path, default=None, help="a file written by --prepare")
    cmd.add_argument("--weights", type=Path, default=None, help="weights fitted by _fit.py")
    cmd.add_argument(
        "--stage1-weights",
        type=Path,
        default=None,
        help="stage-1 weights fitted by _fit.py --refine-steps 0: run only stage 2 here",
    )
    return cmd


def _problem(args: argparse.Namespace, config: TrainConfig) -> str | None:
    """What is wrong with the options of a training run, or ``None``."""
    if (args.out is None) == (args.prepare is None):
        return "give OUT (train) or --prepare FILE (assemble the data only), one of them"
    for flag in ("weights", "stage1_weights"):
        if getattr(args, flag) is not None and args.data is None:
            return f"--{flag.replace('_', '-')} needs --data (the prepared file it was fitted on)"
    if args.weights is not None and args.stage1_weights is not None:
        return "give --weights (fully fitted) or --stage1-weights, not both"
    files = (("--data", args.data), ("--weights", args.weights))
    for flag, path in (*files, ("--stage1-weights", args.stage1_weights)):
        if path is not None and not path.is_file():
            return f"{flag} {path}: no such file"
    if args.stage1_weights is not None and config.refine_steps == 0:
        return "--stage1-weights needs --refine-steps N > 0 (stage 2 is what runs here)"
    if not 0.0 < config.target_fpr < 0.5:
        return f"--target-fpr must be in (0, 0.5), got {config.target_fpr}"
    if config.steps < 1 or config.batch_size < 2 or config.max_len < 8 or config.refine_steps < 0:
        return "--steps must be >= 1, --batch-size >= 2, --max-len >= 8, --refine-steps >= 0"
    return None


def main(argv: list[str], *, stderr: TextIO | None = None) -> int:
    """Run ``shieldbench train shieldguard`` on ``argv``; the exit status (2: bad input)."""
    import sys

    err = sys.stderr if stderr is None else stderr
    args = parser().parse_args(argv)
    config = config_from(args)
    problem = _problem(args, config)
    if problem is not None:
        print(f"error: {problem}", file=err)
        return 2
    try:
        use_data_dir(args.data_dir)
        if args.prepare is not None:
            from shieldbench.train.shieldguard._train import prepare

            counts = prepare(args.prepare, fold=args.fold, seed=config.seed, mix=config.mix)
            print(f"wrote {args.prepare}: {counts}")
            return 0
        from shieldbench.train.shieldguard._train import train

        train(
            args.out,
            config,
            data=args.data,
            weights=args.weights,
            stage1=args.stage1_weights,
            metrics=not args.no_eval,
        )
    except ImportError as exc:
        print(f"error: {NEEDS.format(exc)}", file=err)
        return 2
    except (ShieldbenchError, ValueError) as exc:  # ValueError: a bad prepared file or weights
        print(f"error: {exc}", file=err)
        return 2
    return 0
