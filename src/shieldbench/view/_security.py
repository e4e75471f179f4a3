"""What every response of the viewer carries, and who may ask.

- A strict Content-Security-Policy: scripts, styles and images from the viewer
  itself only (no inline script, no inline style, no remote origin), no framing, forms
  post nowhere but here. With every text escaped by the templates, a payload in the
  data can neither run nor load anything.
- A token, when the viewer is started with one (required off loopback): every
  request must carry it, as ``Authorization: Bearer TOKEN``, as the cookie a first
  ``?token=TOKEN`` visit sets (then redirected to the same URL without it, so the
  token does not stay in the address bar or history), compared in constant time.
- On loopback without a token, only loopback ``Host`` names are served, so a web page
  elsewhere cannot reach the viewer through DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

__all__ = ["COOKIE", "CSP", "Guard", "is_loopback"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none';"
    " frame-ancestors 'none'"
)
COOKIE = "shieldbench_view_token"
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class Guard:
    """The HTTP middleware that checks the token and the Host, and adds the headers."""

    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token else None

    def _authorised(self, request: Request) -> bool:
        if self._token is None:
            host = _host_name(request.headers.get("host", ""))
            return host in _LOOPBACK_NAMES or is_loopback(host)
        auth = request.headers.get("authorization", "")
        offered = auth[7:] if auth.lower().startswith("bearer ") else request.cookies.get(COOKIE)
        return offered is not None and hmac.compare_digest(offered.encode(), self._token)

    async def __call__(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        given = request.query_params.get("token")
        if self._token is not None and given is not None:
            if not hmac.compare_digest(given.encode(), self._token):
                return self._headers(PlainTextResponse("wrong token\n", status_code=401))
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
            return self._headers(response)
        if not self._authorised(request):
            why = (
                "this viewer needs its token: open the URL it printed (…?token=…) or send"
                " Authorization: Bearer TOKEN\n"
                if self._token is not None
                else "this viewer answers on 127.0.0.1 / localhost only\n"
            )
            return self._headers(PlainTextResponse(why, status_code=401))
        return self._headers(await call_next(request))

    @staticmethod
    def _headers(response: Response) -> Response:
        for name, value in _HEADERS.items():
            response.headers[name] = value
        return response
