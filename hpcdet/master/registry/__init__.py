"""The model registry (Determined's ``det model``): named models with numbered versions,
each version pinning one checkpoint so that checkpoint GC never deletes it.

:mod:`.inputs` checks what a request sends; :mod:`.service` reads and changes the rows;
the routes are in :mod:`hpcdet.master.api.models` and the pages in
:mod:`hpcdet.master.web.models`.
"""
