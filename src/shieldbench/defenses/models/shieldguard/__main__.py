"""``python -m shieldbench.defenses.models.shieldguard prepare|train ...``.

``train OUT`` retrains shieldguard from the installed data, ``../shared/datasets``
(or ``SHIELDGUARD_DATA``) and the written data: seeded, CPU by default. The shipped
model's card says how it was made. ``prepare FILE`` writes the assembled data to one
file, so that fitting can happen elsewhere (``_fit.py``, e.g. on a GPU) and
``train OUT --data FILE --weights W`` finishes it here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shieldbench.errors import ShieldbenchError

NEEDS = (
    "training needs torch, transformers, onnx and onnxruntime ({});"
    " pip install 'shieldbench[shieldguard-train]'"
)


def _parser() -> argparse.ArgumentParser:
    from shieldbench.defenses.models.shieldguard._fit import TrainConfig, add_recipe_arguments

    defaults = TrainConfig()
    parser = argparse.ArgumentParser(prog="python -m shieldbench.defenses.models.shieldguard")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="assemble the training data into one .jsonl.gz")
    prep.add_argument("out", type=Path)
    prep.add_argument("--fold", default=None, help="hold out one fold of sources (evaluation)")
    prep.add_argument("--seed", type=int, default=defaults.seed)
    prep.add_argument(
        "--mix",
        type=int,
        default=defaults.mix,
        help="data mix: 1 (default, the shipped model) or 2",
    )
    cmd = sub.add_parser("train", help="fine-tune, export to 8-bit ONNX, calibrate, write card")
    cmd.add_argument("out", type=Path)
    cmd.add_argument("--fold", default=None, help="hold out one fold of sources (evaluation)")
    add_recipe_arguments(cmd)
    cmd.add_argument(
        "--no-eval", action="store_true", help="skip the card's metrics on the shared sets"
    )
    cmd.add_argument("--data", type=Path, default=None, help="a file written by prepare")
    cmd.add_argument("--weights", type=Path, default=None, help="weights fitted by _fit.py")
    cmd.add_argument(
        "--stage1-weights",
        type=Path,
        default=None,
        help="stage-1 weights fitted by _fit.py --refine-steps 0: run only stage 2 here",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.command == "prepare":
            from shieldbench.defenses.models.shieldguard._train import prepare

            counts = prepare(args.out, fold=args.fold, seed=args.seed, mix=args.mix)
            print(f"wrote {args.out}: {counts}")
            return 0
        from shieldbench.defenses.models.shieldguard._fit import config_from
        from shieldbench.defenses.models.shieldguard._train import train
    except ImportError as exc:
        print(f"error: {NEEDS.format(exc)}", file=sys.stderr)
        return 2
    except ShieldbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for flag in ("weights", "stage1_weights"):
        if getattr(args, flag) is not None and args.data is None:
            name = "--" + flag.replace("_", "-")
            message = f"error: {name} needs --data (the prepared file it was fitted on)"
            print(message, file=sys.stderr)
            return 2
    if args.weights is not None and args.stage1_weights is not None:
        print("error: give --weights (fully fitted) or --stage1-weights, not both", file=sys.stderr)
        return 2
    files = (("--data", args.data), ("--weights", args.weights))
    for flag, path in (*files, ("--stage1-weights", args.stage1_weights)):
        if path is not None and not path.is_file():
            print(f"error: {flag} {path}: no such file", file=sys.stderr)
            return 2
    config = config_from(args)
    if args.stage1_weights is not None and config.refine_steps == 0:
        print(
            "error: --stage1-weights needs --refine-steps N > 0 (stage 2 is what runs here)",
            file=sys.stderr,
        )
        return 2
    if not 0.0 < config.target_fpr < 0.5:
        print(f"error: --target-fpr must be in (0, 0.5), got {config.target_fpr}", file=sys.stderr)
        return 2
    if config.steps < 1 or config.batch_size < 2 or config.max_len < 8 or config.refine_steps < 0:
        print(
            "error: --steps must be >= 1, --batch-size >= 2, --max-len >= 8, --refine-steps >= 0",
            file=sys.stderr,
        )
        return 2
    try:
        train(
            args.out,
            config,
            data=args.data,
            weights=args.weights,
            stage1=args.stage1_weights,
            metrics=not args.no_eval,
        )
    except ShieldbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a bad prepared file or weights that do not fit
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
