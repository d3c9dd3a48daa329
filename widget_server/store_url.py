"""The STORE setting's URL, read without connecting (pure: the settings check it at start-up).

`memory`, one Redis (`redis://`, `rediss://`, `unix://`, read by redis-py) or a Redis Cluster:
`redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]`, seed nodes from which the client
discovers the others (stores/redis_connection.py) — the scheme the `limits` library reads
too, so the rate limits (ratelimits.py) share the cluster.
"""

from __future__ import annotations

from urllib.parse import unquote

CLUSTER_SCHEME = "redis+cluster://"
SCHEMES = ("redis://", "rediss://", "unix://", CLUSTER_SCHEME)


class BadStoreUrl(ValueError):
    pass


def cluster_nodes(url: str) -> tuple[list[tuple[str, int]], str | None, str | None]:
    """(seed nodes, username, password) of a `redis+cluster://` URL; BadStoreUrl says what is wrong."""
    rest = url[len(CLUSTER_SCHEME) :].split("/", 1)[0].split("?", 1)[0]
    username = password = None
    if "@" in rest:
        credentials, rest = rest.rsplit("@", 1)
        user_part, _, password_part = credentials.partition(":")
        username, password = unquote(user_part) or None, unquote(password_part) or None
    nodes = []
    for seed in rest.split(","):
        host, _, port = seed.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadStoreUrl(f"{seed.strip() or '(empty)'} is not HOST:PORT")
        nodes.append((host.strip("[]"), int(port)))
    return nodes, username, password
