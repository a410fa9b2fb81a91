"""The one seam to the Kubernetes API: credentials, TLS, transport, discovery, verbs and watches.

Everything the runner sends to or reads from an API server goes through ``client.Kube``;
no module outside this package sees an HTTP library. ``kubeconfig`` reads (and merges)
the credentials, ``auth`` and ``exec_plugin`` turn them into a session with the key
material in memory, ``transport`` sends, ``discovery`` maps kinds to resources, ``watch``
streams events. Errors are typed (``errors``): a refusal by the server is an
``ApplyError``, an unreachable or failing server a ``ClusterError`` with its own exit code.
"""
