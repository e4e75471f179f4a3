"""The engine: runs a defense over samples and records one outcome per sample.

Two calls. :func:`run_defense` screens a :class:`~shieldbench.datasets.Dataset`
and returns a :class:`~shieldbench.types.Run` (with an optional checkpoint so an
interrupted run resumes); :func:`screen` screens a list of texts and returns the
outcomes (the adaptive-attack loop calls it for each batch of candidates). Both
follow :class:`~shieldbench.types.RunConfig`:

- **Fastest capability first.** ``check_batch`` (batches of ``batch_size``, one
  batch at a time; a seeded sample of about ``latency_sample`` texts is screened one
  per ``check`` call instead, for the per-call latency) > ``acheck`` (one asyncio
  event loop, ``concurrency`` calls in flight; if the calling thread already runs a
  loop, the engine's loop runs in a worker thread) > ``check`` (``concurrency`` worker threads; with
  ``concurrency=1`` and no timeout, a plain loop in the caller's thread; with
  ``concurrency=1`` and a timeout, one worker thread for the whole pass).
- **Latency.** ``Outcome.latency_ms`` is what one caller waits for one text: a
  one-text call, caches bypassed (:func:`shieldbench.defenses.uncached`), never a
  text the warm-up called. Texts screened in a batch of several get ``None``; the
  batches' wall time per text is the run's amortised cost
  (``environment["batch_ms_per_text"]``). See :mod:`shieldbench.engine._latency`.
- **Timeouts.** ``timeout_s`` is per text. A one-text call that outlives it becomes
  a ``timeout`` outcome whose message says whether it hung or answered late. A batch
  of ``n`` texts has ``n * timeout_s``; past that it is abandoned and its texts are
  screened again one per call, so only a text that hangs alone times out. Async
  calls are cancelled. A sync call cannot be killed: its
  (daemon) thread is abandoned, a replacement carries on, and the late result
  is discarded, so a stuck call never hangs the run nor its end.
- **Retries.** :class:`~shieldbench.errors.TransientDefenseError` is retried up
  to ``retries`` times, waiting its ``retry_after_s`` when given, else
  ``retry_backoff_s`` doubled on each retry. ``Outcome.attempts`` counts calls;
  latency is the last attempt's. Timeouts are not retried.
- **Errors are outcomes.** Any other exception gives ``status="error"`` with
  ``error="ExcType: message"``; a return value that is not a Verdict gives an
  error naming its type. A batch that raises is screened again text by text
  with ``check``, so one bad text cannot fail a whole batch. The
  ``error_policy`` is only recorded; metrics apply it.
- **Warm-up.** ``warmup`` calls before measuring, shaped like the measured calls
  but on stand-ins of the first texts (never the measured texts: a cache would keep
  them); their results and latencies are dropped.
- **Progress.** A :class:`ProgressHook` is told ``(done, total)``; the engine
  never prints.
- **Event loops.** Every engine call runs its own event loop, so an async
  defense must create loop-bound resources (an ``aiohttp.ClientSession``) per
  running loop, not once for the life of the defense.
- **Ownership.** The engine never calls ``close()``: the caller owns the defense.
- **Executors.** By default checks run in this process; ``executor=``
  :class:`RayExecutor` runs them on a Ray actor pool (the defense built from its
  spec once per worker, the local engine on each worker), with outcomes streaming
  back into the same checkpoint.

Example:
    >>> from shieldbench.engine import screen
    >>> from shieldbench.types import RunConfig, Verdict
    >>> class Flaky:
    ...     name = "flaky"
    ...     def check(self, text: str) -> Verdict:
    ...         if text == "boom":
    ...             raise ValueError("cannot parse")
    ...         return Verdict(blocked=False, score=0.0)
    >>> out = screen(Flaky(), ["hi", "boom"], config=RunConfig(warmup=0, concurrency=2))
    >>> [(o.status, o.error) for o in out]
    [('ok', None), ('error', 'ValueError: cannot parse')]
"""

from __future__ import annotations

from shieldbench.engine._e2e import EndToEnd, apply_end_to_end
from shieldbench.engine._execute import check_defense, screen
from shieldbench.engine._executor import Executor
from shieldbench.engine._progress import ProgressHook
from shieldbench.engine._ray import RayExecutor
from shieldbench.engine._ray_local import start_local_ray
from shieldbench.engine._run import environment, new_run_id, run_defense
from shieldbench.engine._shards import mark_shard, merge_runs, parse_shard, shard_dataset

__all__ = [
    "EndToEnd",
    "Executor",
    "ProgressHook",
    "RayExecutor",
    "apply_end_to_end",
    "check_defense",
    "environment",
    "mark_shard",
    "merge_runs",
    "new_run_id",
    "parse_shard",
    "run_defense",
    "screen",
    "shard_dataset",
    "start_local_ray",
]
