"""The status page: a read-only view of the syncs, served by ``lockgate serve`` and ``lockgate status --web``.

``view`` turns inventories, Events and (under ``serve``) the scheduler's live state into the
JSON documents the page reads; ``live`` records what the passes of a running ``serve`` did
(change sets, unhealthy objects, drift corrections); ``cluster`` reads inventories, Events and
artifact provenance from the cluster and the registry; ``fleet`` reads, under ``serve``, which
clusters attested each sync's digests (``lockgate.fleet``); ``app`` is the Starlette application
(API, static files, security headers, bearer-token check). The page itself is plain
HTML/CSS/JS under ``static/``, shipped as package data.
"""
