"""Whether the API a command talks to can be reached, asked before the target model loads (seconds
to load, then nothing to draft with), by opening a TCP connection to it and closing it unused."""

from __future__ import annotations

import socket
import urllib.parse
import urllib.request

from providers.errors import ProviderError

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _first_hop(url: urllib.parse.SplitResult) -> tuple[str | None, int, bool]:
    """(host, port, proxied): where a request to `url` connects first, the proxy the environment
    sets (HTTPS_PROXY, ALL_PROXY; NO_PROXY exempts) when one applies, as the SDKs choose it."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    proxied = bool(proxy) and not urllib.request.proxy_bypass(url.hostname or "")
    if proxy and proxied:
        url = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return url.hostname, url.port or _DEFAULT_PORTS.get(url.scheme, 80), proxied


def check_reachable(url: str, timeout: float) -> None:
    """Return when a connection to `url`'s host and port (or to its proxy) opens within `timeout`
    seconds; else raise a ProviderError that names `url` and why (refused, no such host, timed
    out). No answer is awaited: a server that accepts and then stalls passes here and times out in
    the run, as its requests would."""
    where = url
    try:
        host, port, proxied = _first_hop(urllib.parse.urlsplit(url))
        if proxied:
            where = f"{url} (through the proxy the environment sets)"
        if not host:
            raise ValueError("the URL names no host")
        socket.create_connection((host, port), timeout=timeout).close()
    except (OSError, ValueError) as exc:  # ValueError: a port that is no number
        raise ProviderError(f"cannot reach {where}: {exc}") from exc
