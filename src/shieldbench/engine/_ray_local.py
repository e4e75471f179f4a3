"""A local Ray instance that listens on the loopback interface only.

A Ray node accepts work from anyone who can reach its GCS, raylet, object manager
and workers: a Ray started on all interfaces is a cluster that anyone on the
network can submit code to (the "ShadowRay" class of incidents). Every Ray that
shieldbench starts itself (``run --executor ray`` without ``--ray-address``,
:class:`~shieldbench.engine.RayExecutor` without ``address``, the test suite)
goes through :func:`start_local_ray`, which binds all of it to ``127.0.0.1``.

Why it takes more than ``_node_ip_address="127.0.0.1"``: ``ray.init`` turns a
loopback node address into the machine's network address (so that other nodes
could join) unless Ray is in its single-machine mode, and Ray's servers bind to
the node address (the GCS, the raylet and the object manager, the workers' gRPC
servers, the runtime-env agent, the autoscaler monitor's metrics). So the start
runs in single-machine mode (``ray_constants.ENABLE_RAY_CLUSTER`` off for the
duration of ``ray.init``; it is what ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
sets), with no dashboard, and the node address Ray ended with is checked: if it
is not loopback, the instance is shut down and the start fails. A cluster the
user names (``--ray-address``) is the user's: nothing here applies to it, except
that a loopback address is reached on loopback (:func:`keep_loopback`; stock
``ray.init`` would rewrite ``127.0.0.1:PORT`` to the network address and never reach
a cluster that listens on loopback only).
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
from collections.abc import Iterator
from typing import Any

from shieldbench.errors import ConfigError, RunError

__all__ = ["LOOPBACK", "import_ray", "is_loopback_address", "keep_loopback", "start_local_ray"]

LOOPBACK = "127.0.0.1"
"""The only address a Ray started by shieldbench listens on."""


def import_ray() -> Any:
    """``import ray``, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed; install it with:"
            " pip install 'shieldbench[ray]'"
        ) from None
    return ray


def is_loopback_address(address: str) -> bool:
    """Whether ``HOST:PORT`` names a loopback host (``127.0.0.1:6379``, ``localhost:...``)."""
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def keep_loopback() -> Iterator[None]:
    """Ray's single-machine mode for the duration of the block: ``ray.init`` keeps a
    loopback node or GCS address instead of turning it into the machine's network
    address (where a Ray listening on loopback only cannot be reached)."""
    constants: Any = importlib.import_module("ray._private.ray_constants")
    saved = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = saved


def start_local_ray(**options: Any) -> Any:
    """Start Ray on this machine, listening on ``127.0.0.1`` only; return the module.

    ``options`` go to ``ray.init`` (``num_cpus``, ``num_gpus``, ``_temp_dir``,
    ``log_to_driver``...); the address, the node address and the dashboard are
    fixed here and cannot be given. Raises :class:`RunError` if Ray does not start,
    or starts on another address (then it is shut down first).
    """
    fixed = {"address", "_node_ip_address", "include_dashboard", "dashboard_host"}
    given = sorted(fixed & set(options))
    if given:
        raise ValueError(f"start_local_ray fixes {', '.join(given)}; do not pass them")
    ray = import_ray()
    constants: Any = importlib.import_module("ray._private.ray_constants")
    saved = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False  # single machine: keep the loopback node address
    try:
        ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RunError(f"cannot start a local Ray: {exc}") from None
    finally:
        constants.ENABLE_RAY_CLUSTER = saved
    node_ip = ray.util.get_node_ip_address()
    if node_ip != LOOPBACK:
        ray.shutdown()
        raise RunError(
            f"a local Ray started on {node_ip}, not {LOOPBACK}, and would listen on the"
            " network; it was stopped. Start a cluster yourself and pass --ray-address"
        )
    return ray
