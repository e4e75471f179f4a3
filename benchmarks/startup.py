"""Start-up time of the library and the command line, as ratios to a bare interpreter.

Each command runs in a fresh interpreter (``subprocess``); its wall time is the best
of ``--repeat`` runs (default 5), and so is the baseline, ``python -c pass``, measured
in the same run. The ratios hold across machines much better than the absolute
times, which are printed too, with the CPU time (user + system) of the best run: on
a busy machine wall time includes waiting for a core, and CPU time is closer to what
an idle machine's wall time would be.

- ``import shieldbench`` (the library's public API);
- ``shieldbench --help`` (every command module is imported to register its command);
- ``shieldbench defenses list`` (imports every built-in defense to list it).

Heavy third-party modules (scipy, matplotlib, datasketch, pyarrow, jinja2, yaml,
torch...) are imported inside the functions that need them, so none of the three
pays for them (``tests/test_startup.py`` checks which modules get imported).

Bytecode: an installed package has ``.pyc`` files, so by default the commands run
with bytecode caching on, in a temporary ``PYTHONPYCACHEPREFIX`` (the source tree is
left alone), after one untimed warm-up run. ``--no-bytecode`` measures with
``PYTHONDONTWRITEBYTECODE=1`` instead: every shieldbench module is compiled from
source on each start, as in a checkout where writing bytecode is disabled.

Run: ``.venv/bin/python benchmarks/startup.py [--repeat N] [--no-bytecode]``
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.5  # wall time on an idle machine, for import shieldbench and --help


def _cli(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("shieldbench")
    if script.exists():
        return [str(script), *args]
    code = "import sys; from shieldbench.cli import main; sys.argv[0] = 'shieldbench'; main()"
    return [sys.executable, "-c", code, *args]


COMMANDS: dict[str, list[str]] = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "import shieldbench": [sys.executable, "-c", "import shieldbench"],
    "shieldbench --help": _cli("--help"),
    "shieldbench defenses list": _cli("defenses", "list"),
}


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    cpu = _cpu_children()
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu_children() - cpu


def measure(*, repeat: int = 5, bytecode: bool = True) -> dict[str, tuple[float, float]]:
    """Best-of-``repeat`` ``(wall, cpu)`` seconds of each command (see the module doc)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", COLUMNS="100")
    with tempfile.TemporaryDirectory(prefix="shieldbench-pyc-") as cache:
        if bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = cache
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        for cmd in COMMANDS.values():
            _run(cmd, env)  # warm-up: bytecode written, files in the page cache
        best = dict.fromkeys(COMMANDS, (float("inf"), float("inf")))
        for _ in range(repeat):  # interleaved, so a noisy moment hits every command
            for name, cmd in COMMANDS.items():
                best[name] = min(best[name], _run(cmd, env))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (best kept)")
    parser.add_argument("--no-bytecode", action="store_true", help="PYTHONDONTWRITEBYTECODE=1")
    args = parser.parse_args()
    best = measure(repeat=args.repeat, bytecode=not args.no_bytecode)
    baseline = best["python -c pass (baseline)"][0]
    mode = "no .pyc (compiled on every start)" if args.no_bytecode else "with .pyc"
    print(f"start-up, best of {args.repeat}, {mode}; baseline python -c pass = {baseline:.3f} s")
    print(f"{'command':<28} {'wall s':>7} {'vs baseline':>12} {'cpu s':>7}  target (idle wall)")
    for name, (wall, cpu) in best.items():
        if name.endswith("(baseline)"):
            continue
        target = f"< {TARGET_S:g} s" if name != "shieldbench defenses list" else "-"
        print(f"{name:<28} {wall:>7.3f} {wall / baseline:>11.1f}x {cpu:>7.3f}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
