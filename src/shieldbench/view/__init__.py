"""``shieldbench view``: a read-only web application over the run history.

Browse every run (filtered, sorted and paged on the server), open a run (headline
figures with intervals and n, per category, the security / utility plane, curves,
latency) and its sample table (search, outcome kind, category, tier, source, score
range), open any sample, compare runs of the same data (paired tests and the samples
whose verdict flipped, both directions), follow a defense identity over time, and
read adaptive attacks of every kind: the mutator search (rounds, mutators, bypasses)
and PAIR, TAP and Crescendo (what ``shieldbench report`` renders for them, with every
goal's transcript). Every URL is stable: ``/runs/ID``, ``/runs/ID/samples/N``,
``/compare?run=A&run=B``, ``/trend?dataset=HASH``, ``/attacks/ID``,
``/attacks/ID/goals/N``.

Damaged records (edited by hand, or by another tool) are checked where they are
loaded (:mod:`._records`): a page answers 422 naming the record and the field at
fault, and a list page leaves the record out and says why, never failing whole.

Safety: the store is opened read-only; every text from data is escaped by the
templates (autoescape) and the charts (:mod:`markupsafe`); every response carries a
strict Content-Security-Policy (the packaged script and stylesheet only, no inline
script or style, no remote origin); the server binds loopback unless told otherwise
and then needs a token (:func:`check_bind`).

Example:
    >>> check_bind("127.0.0.1", None)
    >>> try:
    ...     check_bind("0.0.0.0", None)
    ... except ConfigError as error:
    ...     print(str(error)[:38])
    --host 0.0.0.0 is not loopback: anyone
"""

from __future__ import annotations

from shieldbench.errors import ConfigError
from shieldbench.view._app import create_app
from shieldbench.view._security import CSP, is_loopback

__all__ = ["CSP", "TOKEN_ENV", "check_bind", "create_app", "is_loopback"]

TOKEN_ENV = "SHIELDBENCH_VIEW_TOKEN"


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve the history beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"--host {host} is not loopback: anyone who can reach it could read the"
            f" history; give --token (or {TOKEN_ENV}), or bind 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise ConfigError("--token: use at least 16 characters (e.g. `openssl rand -hex 16`)")
