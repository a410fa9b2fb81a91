"""The runner's commands beside ``runner.cli``'s ``reconcile``: each one library call and a print."""
