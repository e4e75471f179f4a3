"""Start-up time of the library and the command line, as ratios to a bare interpreter.

Each command runs in a fresh interpreter (``subprocess``); its wall time is the best
of ``--repeat`` runs (default 5), and so is the baseline, ``python -c pass``, measured
in the same run. The ratios hold across machines much better than the absolute
times, which are printed too, with the CPU time (user + system) of the best run: on
a busy machine wall time includes waiting for a core, and CPU time is closer to what
an idle machine's wall time would be.

- ``import shieldbench`` (the library's public API);
- ``shieldbench --help`` (every command module is imported to register its command);
- ``shieldbench defenses list`` (imports every built-in defense to list it);
- ``shieldbench --version`` (the smallest command: the command tree, nothing run);
- ``shieldbench run -d pattern -D builtin:smoke --no-store`` (a whole pattern-only
  benchmark of the 38-sample smoke suite: load, screen, statistics, the three
  reports with their charts; the history is not opened). Goal: under 1.5 s wall on an
  idle 2-core machine.

Heavy third-party modules (scipy, datasketch, pyarrow, jinja2, yaml, torch...) are
imported inside the functions that need them, so none of the first four pays for them
and the pattern-only run pays only for what it uses (numpy and scipy for the
statistics, jinja2 for the HTML report; its charts are SVG written by
``shieldbench.charts``, no plotting library):
``tests/test_startup.py`` checks which modules each one imports.

Bytecode: an installed package has ``.pyc`` files, so by default the commands run
with bytecode caching on, in a temporary ``PYTHONPYCACHEPREFIX`` (the source tree is
left alone), after one untimed warm-up run. ``--no-bytecode`` measures with
``PYTHONDONTWRITEBYTECODE=1`` instead: every shieldbench module is compiled from
source on each start, as in a checkout where writing bytecode is disabled.

Run: ``.venv/bin/python benchmarks/startup.py [--repeat N] [--no-bytecode] [--quick]
[--save]`` (``--quick``: one timed run each; ``--save``: also write the table to
``benchmarks/results/startup.txt``, with the date, the machine's CPU count and its
load average, since a loaded machine's wall times are not an idle machine's).
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
RUN_TARGET_S = 1.5  # wall time on an idle 2-core machine, for the pattern-only run
RESULTS = Path(__file__).parent / "results" / "startup.txt"
_OUT = "{out}"  # the run's report folder: a fresh one for each run (see _run)


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
    "shieldbench --version": _cli("--version"),
    "run -d pattern -D builtin:smoke": _cli(
        "run", "-d", "pattern", "-D", "builtin:smoke", "--no-store", "--out", _OUT
    ),
}
TARGETS = {
    "import shieldbench": TARGET_S,
    "shieldbench --help": TARGET_S,
    "shieldbench --version": TARGET_S,
    "run -d pattern -D builtin:smoke": RUN_TARGET_S,
}


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    with tempfile.TemporaryDirectory(prefix="shieldbench-startup-") as folder:
        cmd = [part.replace(_OUT, f"{folder}/out") for part in cmd]
        cpu = _cpu_children()
        start = time.perf_counter()
        subprocess.run(
            cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
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


def report(best: dict[str, tuple[float, float]], *, repeat: int, bytecode: bool) -> str:
    """The table: each command's best wall time, its ratio to ``python -c pass``, CPU."""
    baseline = best["python -c pass (baseline)"][0]
    mode = "with .pyc" if bytecode else "no .pyc (compiled on every start)"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"start-up, best of {repeat}, {mode}; baseline python -c pass = {baseline:.3f} s",
        f"measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()}"
        f" CPUs, load average {load} (wall times on a loaded machine are not idle figures;"
        " the ratios and CPU times travel better)",
        f"{'command':<32} {'wall s':>7} {'vs baseline':>12} {'cpu s':>7}  target (idle wall)",
    ]
    for name, (wall, cpu) in best.items():
        if name.endswith("(baseline)"):
            continue
        target = f"< {TARGETS[name]:g} s" if name in TARGETS else "-"
        lines.append(f"{name:<32} {wall:>7.3f} {wall / baseline:>11.1f}x {cpu:>7.3f}  {target}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (best kept)")
    parser.add_argument("--quick", action="store_true", help="one timed run per command")
    parser.add_argument("--no-bytecode", action="store_true", help="PYTHONDONTWRITEBYTECODE=1")
    parser.add_argument("--save", action="store_true", help=f"also write {RESULTS.name}")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    best = measure(repeat=repeat, bytecode=not args.no_bytecode)
    text = report(best, repeat=repeat, bytecode=not args.no_bytecode)
    print(text)
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
