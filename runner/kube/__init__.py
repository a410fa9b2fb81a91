"""The one seam to the Kubernetes API: credentials, transport, discovery, verbs and watches.

Everything the runner sends to or reads from an API server goes through ``client.Kube``;
no module outside this package sees an HTTP library. Errors are typed (``errors``): a
refusal by the server is an ``ApplyError``, an unreachable or failing server a
``ClusterError`` with its own exit code.
"""
