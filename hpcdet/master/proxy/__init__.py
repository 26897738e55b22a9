"""The master's proxy to services running in jobs (``det notebook``, TensorBoard).

A proxied task is a command task with a ``service_token`` (generated at submission). Its job
starts the service on a free port of its node under the path prefix ``/proxy/<task_id>/``
and, once it answers, writes ``$DET_TASK_DIR/service.json`` (``{"host": ..., "port": ...}``).

- :mod:`.registration`: the reconciler reads that file once per running task without an
  address, checks the host is exactly one of the job's nodes and the port one a job may
  own, and stores the address the host resolves to then (:mod:`.pinning`: the only one
  the proxy dials); it clears it when the task leaves RUNNING.
- :mod:`.access`: who may use the proxy (the task's owner, identified as the web pages and
  the API identify them) and where it goes (the pinned address).
- :mod:`.headers`: what is forwarded (the caller's master credentials and forwarded
  headers never are; the service's own secret is added), and what comes back (the
  service's cookies confined to its task's path: :mod:`.cookies`).
- :mod:`.forward`: the async HTTP (streaming) and WebSocket forwarding.
- :mod:`.asgi`: the master's ASGI application: ``/proxy/...`` to the proxy, everything else
  to the Flask app through a thread-pool WSGI adapter (docs/notebooks.md).
"""
