"""The test world: a real OCI registry, Kubernetes API server and Git remote on loopback.

One implementation, used by the pytest fixtures, ``make demo``, ``make world`` and the
benchmarks. Nothing here is a mock: every component is the real program, started as a
process bound to 127.0.0.1 on a free port, logging to a file, stopped by its PID.
"""
