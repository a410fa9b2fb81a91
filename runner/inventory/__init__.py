"""What the runner records in the cluster: the ApplySet inventory Secret and its Events.

``store`` reads and writes the parent Secret whose document ``runner.plan.inventory``
describes; ``events`` records what a pass did on it.
"""
