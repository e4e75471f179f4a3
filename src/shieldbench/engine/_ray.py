"""The Ray executor: the same engine on a pool of Ray actors, one defense per worker.

How a run goes:

- **One defense per worker.** Each actor builds the defense from its *spec string*
  once (``build_defense(spec)`` on the worker: the defense object itself is never
  pickled, so a model is loaded where it runs, on the worker's CPU or GPU).
- **Batches out, outcomes back as they arrive.** The driver cuts the positions to
  screen into batches of ``batch_size`` texts (``RunConfig.batch_size`` unless the
  executor says otherwise), keeps ``in_flight`` batches queued per actor so no
  worker waits on the driver, and records each finished batch's outcomes at once:
  into the results, the checkpoint and the progress hook. ``--resume`` therefore
  works as for a local run: the checkpoint holds every batch that came back.
- **The local engine inside each worker.** A worker screens its batch with the
  local engine (:func:`~shieldbench.engine._execute.execute`), so timeouts, retries
  of transient errors, errors as outcomes, the capability choice (``check_batch`` >
  ``acheck`` > ``check``) and ``concurrency`` (calls in flight *per worker*) behave
  exactly as locally, and a per-sample step the engine runs after a check runs on
  the worker too. Warm-up runs once per worker, on its first batch.
- **A lost worker loses no outcome.** When an actor dies (its process is killed, its
  node goes away) the batches it held are sent again to a fresh actor; the driver
  records a batch only once, so every sample gets exactly one outcome. After
  :func:`replacement_limit` replacements the run stops with
  :class:`~shieldbench.errors.RunError` (what finished stays in the checkpoint).
- **A frozen worker does not freeze the run.** A worker whose process hangs (stopped,
  deadlocked, stuck in native code: alive, so Ray does not replace it) is caught by
  a driver-side deadline: when an actor has returned nothing for
  ``batch_deadline_s`` while it holds work, it is killed and replaced and its
  batches are sent again; the batch it was screening, if it freezes a worker a
  second time, gets ``timeout`` outcomes (which the error policy counts like any
  other timeout) instead of freezing a third.
- **Resources.** ``gpus_per_worker`` / ``cpus_per_worker`` go to every actor's Ray
  options; asking for more than any node has is a clear error before any actor is
  made (Ray itself would leave the actor pending forever), and actors that do not
  start within ``start_timeout_s`` (a busy cluster) are one too.
- **Clear errors.** An address that does not answer and a defense that cannot be
  built on a worker (a package missing there) are :class:`~shieldbench.errors.RunError`
  naming the address or the spec and the worker's own error.
- **Loopback only when started here.** Without ``address`` the executor starts a
  local Ray with :func:`~shieldbench.engine._ray_local.start_local_ray`: every
  part of it listens on ``127.0.0.1``, never on the network.

Ray is imported only when an executor starts, so the CLI does not pay for it.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from shieldbench.engine._ray_dispatch import Dispatch, ray_cause
from shieldbench.engine._ray_local import (
    import_ray,
    is_loopback_address,
    keep_loopback,
    start_local_ray,
)
from shieldbench.engine._ray_parts import Screener, batch_deadline
from shieldbench.engine._record import Recorder
from shieldbench.errors import ConfigError, RunError
from shieldbench.types import RunConfig

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["RayExecutor", "batch_deadline", "replacement_limit"]

_WAIT_S = 0.1  # the driver wakes at least this often to report progress and flush


def replacement_limit(workers: int) -> int:
    """How many dead actors are replaced in one call before the run gives up."""
    return max(4, 2 * workers)


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast with a clear error when ``HOST:PORT`` does not accept connections."""
    if address in ("auto", "local") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(
            f"--ray-address {address!r}: give HOST:PORT of the Ray head (e.g. 10.0.0.5:6379),"
            " 'auto', or a ray:// client address"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise RunError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it with"
            " `ray start --head --port PORT` there, or check the address and firewall"
        ) from None


class RayExecutor:
    """Screen on a Ray cluster: a pool of ``workers`` actors building ``spec`` once each.

    ``address`` is ``None`` for a local Ray started on this machine (or the Ray
    already initialised in this process), ``HOST:PORT`` of a head node started with
    ``ray start --head``, ``auto`` (the cluster of ``RAY_ADDRESS`` or of
    ``ray job submit``) or a ``ray://`` client address. ``workers`` actors each
    reserve ``cpus_per_worker`` CPUs and ``gpus_per_worker`` GPUs. ``batch_size``
    overrides ``RunConfig.batch_size`` for the batches sent to the workers; each
    actor has ``in_flight`` batches queued. ``batch_deadline_s`` is how long an
    actor holding work may stay silent before it counts as frozen (default:
    :func:`batch_deadline`); ``start_timeout_s`` how long the actors may take to
    start.

    Use it as a context manager (or call :meth:`close`): actors live across calls,
    so an attack screening many rounds pays the defense's start-up once per worker.

    Example (needs Ray)::

        with RayExecutor("pattern", workers=4) as pool:
            run = run_defense(build_defense("pattern"), data, defense_spec="pattern",
                              executor=pool)
    """

    def __init__(
        self,
        spec: str,
        *,
        address: str | None = None,
        workers: int = 2,
        cpus_per_worker: float = 1.0,
        gpus_per_worker: float = 0.0,
        batch_size: int | None = None,
        in_flight: int = 2,
        batch_deadline_s: float | None = None,
        start_timeout_s: float = 300.0,
    ) -> None:
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError("the Ray executor needs the defense's spec string")
        if not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"--workers must be a positive integer, got {workers!r}")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {batch_size!r}")
        if cpus_per_worker < 0 or gpus_per_worker < 0 or in_flight < 1:
            raise ConfigError("cpus/gpus per worker must be >= 0 and in_flight >= 1")
        if batch_deadline_s is not None and not batch_deadline_s > 0:
            raise ConfigError(f"batch_deadline_s must be positive, got {batch_deadline_s!r}")
        self.batch_deadline_s = batch_deadline_s
        self.start_timeout_s = start_timeout_s
        self.spec = spec
        self.address = address
        self.workers = workers
        self.cpus_per_worker = cpus_per_worker
        self.gpus_per_worker = gpus_per_worker
        self.batch_size = batch_size
        self.in_flight = in_flight
        self.capability = "check"
        self.replaced = 0  # actors replaced after dying, over the executor's life
        self._actors: list[Any] = []
        self._remote: Any = None

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> RayExecutor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        """Connect to (or start) Ray and build the actors; idempotent."""
        if self._actors:
            return
        ray = import_ray()
        if self.address is not None:
            _check_reachable(self.address)
        if not ray.is_initialized():
            if self.address is None:  # started here: on loopback only (see _ray_local)
                start_local_ray(
                    num_cpus=max(self.workers, os.cpu_count() or 1),
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                loopback = is_loopback_address(self.address)
                # a driver joining a cluster on this host stays on loopback too
                node = {"_node_ip_address": "127.0.0.1"} if loopback else {}
                try:
                    with keep_loopback() if loopback else contextlib.nullcontext():
                        ray.init(
                            address=self.address,
                            log_to_driver=False,
                            configure_logging=False,
                            **node,
                        )
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise RunError(
                        f"cannot connect to the Ray cluster at {self.address}: {exc}"
                    ) from None
        self._check_resources(ray)
        self._remote = ray.remote(
            num_cpus=self.cpus_per_worker, num_gpus=self.gpus_per_worker, max_restarts=0
        )(Screener)
        actors = [self._new_actor() for _ in range(self.workers)]
        try:
            caps = ray.get([a.ready.remote() for a in actors], timeout=self.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            for a in actors:
                ray.kill(a)
            raise RunError(
                f"the {self.workers} Ray workers did not start within {self.start_timeout_s:g} s:"
                f" the cluster lacks free resources for {self.workers} x"
                f" ({self.cpus_per_worker:g} CPU, {self.gpus_per_worker:g} GPU);"
                f" lower --workers or free the cluster"
            ) from None
        except ray.exceptions.RayError as exc:
            for a in actors:
                ray.kill(a)
            raise RunError(
                f"defense {self.spec!r} cannot be built on a Ray worker: {ray_cause(exc)}."
                " Install on every node what the spec needs (shieldbench with the same"
                " extras, the package of a python: defense, the model files)"
            ) from None
        self.capability = caps[0][1]
        self._actors = actors

    def _check_resources(self, ray: Any) -> None:
        """One node must have what one worker asks for, else Ray would wait forever."""
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        for key, want in (("GPU", self.gpus_per_worker), ("CPU", self.cpus_per_worker)):
            most = max((float(r.get(key, 0.0)) for r in nodes), default=0.0)
            if want > most:
                raise ConfigError(
                    f"each Ray worker asks for {want:g} {key}(s), but no node of the cluster"
                    f" has that many (the most on one node: {most:g});"
                    + (" lower --gpus-per-worker" if key == "GPU" else " lower cpus_per_worker")
                )

    def worker_gpus(self) -> list[list[Any]]:
        """The GPU ids Ray gave each live actor (for tests and diagnostics)."""
        ray = import_ray()
        return list(ray.get([a.gpu_ids.remote() for a in self._actors]))

    def _new_actor(self) -> Any:
        return self._remote.remote(self.spec)

    def close(self) -> None:
        """Kill the actors (Ray itself stays up for the rest of the process)."""
        if not self._actors:
            return
        ray = import_ray()
        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors = []

    def worker_pids(self) -> list[int]:
        """The process ids of the live actors (for tests and diagnostics)."""
        ray = import_ray()
        return [pid for pid, _ in ray.get([a.ready.remote() for a in self._actors])]

    # -- screening ---------------------------------------------------------------

    def execute(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        positions: Sequence[int],
        *,
        config: RunConfig,
        recorder: Recorder,
    ) -> str:
        """Record an outcome for every ``i`` in ``positions``; returns the capability.

        The loop: fill every actor's queue, wait for one answer (or ``_WAIT_S``), record
        it, replace actors that froze, report progress; see :class:`Dispatch`.
        """
        self.start()
        ray = import_ray()
        size = self.batch_size or config.batch_size
        run = Dispatch(
            self._actors,
            self._respawn,
            texts,
            ids,
            positions,
            size=size,
            in_flight=self.in_flight,
            deadline=self.batch_deadline_s or batch_deadline(config, size),
            replace_limit=replacement_limit(self.workers),
            config=config.to_dict(),
            recorder=recorder,
        )
        try:
            while True:
                run.fill()
                if not run.queued:
                    break
                ready, _ = ray.wait(list(run.queued), num_returns=1, timeout=_WAIT_S)
                for ref in ready:
                    run.collect(ref)
                now = perf_counter()
                run.unfreeze(now)
                recorder.tick(now)
        except BaseException:
            run.cancel()
            raise
        return self.capability

    def _respawn(self, slot: int, exc: BaseException) -> None:
        """Kill the actor of ``slot`` (dead or frozen: ``exc`` says why) and start another."""
        ray = import_ray()
        with contextlib.suppress(Exception):
            ray.kill(self._actors[slot])
        actor = self._new_actor()
        try:
            ray.get(actor.ready.remote())
        except ray.exceptions.RayError as again:
            raise RunError(
                f"a Ray worker died ({ray_cause(exc)}) and its replacement could not start:"
                f" {ray_cause(again)}"
            ) from None
        self._actors[slot] = actor
        self.replaced += 1
