"""A proxied service's cookies: confined to its task's own path on the master's origin.

A service's pages are served from the master's origin, so a ``Set-Cookie`` passed on as the
service wrote it could set a cookie for every page of the master (``Path=/``), for a parent
domain (``Domain=``), or under the master's own names (issue 28, finding 5). Each one is
rewritten instead:

- a cookie named like one of the master's (:func:`is_masters`: ``hpcdet_...``, case
  ignored, also behind a ``__Secure-``/``__Host-`` prefix) is dropped, and so is any
  ``__Host-`` cookie, which a browser takes only with ``Path=/``;
- ``Domain`` is removed: the cookie is host-only (the master's host);
- ``Path`` becomes the task's prefix ``/proxy/<task id>/``, unless the service gave a path
  inside it (Jupyter sets ``_xsrf`` and its login cookie for its ``base_url``, which is that
  prefix);
- everything else (``Secure``, ``HttpOnly``, ``SameSite``, ``Max-Age``, ``Expires``) is
  kept as the service wrote it.
"""

from __future__ import annotations

MASTER_COOKIE_PREFIX = "hpcdet"
# Cookie name prefixes the browser gives a meaning to (RFC 6265bis 4.1.3).
NAME_PREFIXES = ("__secure-", "__host-")


def task_prefix(task_id: int) -> str:
    """The path every page of a task's service lies under."""
    return f"/proxy/{task_id}/"


def is_masters(name: str) -> bool:
    """Whether a cookie name is (or could pass for) one of the master's own."""
    lower = name.strip().lower()
    for prefix in NAME_PREFIXES:
        lower = lower.removeprefix(prefix)
    return lower.startswith(MASTER_COOKIE_PREFIX)


def _inside(path: str, prefix: str) -> bool:
    """Whether a cookie path lies under ``prefix`` without any trick a browser would
    resolve differently (dot segments, escapes, backslashes)."""
    return (path.startswith(prefix) and "/." not in path and "%" not in path
            and "\\" not in path)


def confine(set_cookie: str, prefix: str) -> str | None:
    """The ``Set-Cookie`` value ``set_cookie`` confined to ``prefix`` (see the module
    doc); None when it must be dropped."""
    pair, _, attributes = set_cookie.partition(";")
    name = pair.split("=", 1)[0].strip()
    if not name or "=" not in pair or is_masters(name) or name.lower().startswith("__host-"):
        return None
    kept = [pair.strip()]
    path = prefix
    for attribute in attributes.split(";"):
        key, _, value = attribute.strip().partition("=")
        key = key.strip().lower()
        if key == "path":
            path = value.strip() if _inside(value.strip(), prefix) else prefix
        elif key and key != "domain":
            kept.append(attribute.strip())
    return "; ".join([*kept, f"Path={path}"])
