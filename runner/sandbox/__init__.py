"""CEL expressions out of the runner's process, with limits: a tenant's expression cannot stall it.

cel-expr-python evaluates in C++ holding the GIL, with no cost limit, deadline or interruption
to set (its one bound is a fixed budget of comprehension iterations, which does not bound the
work inside them): one costly ``healthCheckExprs`` expression would stop every thread of
``serve``, its probes included. So the runner's expressions run in worker processes
(``worker``, started with ``python -m runner.sandbox.worker``), which ``pool`` hands to each
wait's look and watches: an evaluation over ``pool.EVALUATION_CPU_SECONDS`` of CPU (or its
wall-clock backstop), or a worker over its memory rlimit, is stopped by ending the worker,
and the object it was judging is Failed, naming the expression; a new worker takes the rest.
The static estimate at load (``runner.plan.cel_cost``) refuses what is costly by its shape;
this bounds what is costly by its data.
"""
