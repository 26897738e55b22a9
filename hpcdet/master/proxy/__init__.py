"""The master's proxy to services running in jobs (``det notebook``, TensorBoard).

A proxied task is a command task with a ``service_token`` (generated at submission). Its job
starts the service on a free port of its node under the path prefix ``/proxy/<task_id>/``
and, once it answers, writes ``$DET_TASK_DIR/service.json`` (``{"host": ..., "port": ...}``).

- :mod:`.registration`: the reconciler reads that file once per running task without an
  address, checks the host is one of the job's nodes and stores the address; it clears it
  when the task leaves RUNNING.
- :mod:`.access`: who may use the proxy (the task's owner and cluster admins, identified as
  the web pages and the API identify them) and where it goes.
- :mod:`.headers`: what is forwarded (the caller's master credentials never are; the
  service's own secret is added).
- :mod:`.forward`: the async HTTP (streaming) and WebSocket forwarding.
- :mod:`.asgi`: the master's ASGI application: ``/proxy/...`` to the proxy, everything else
  to the Flask app through a thread-pool WSGI adapter (docs/notebooks.md).
"""
