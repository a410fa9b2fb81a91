"""The cluster side of lockgate: pull a verified artifact and converge the cluster.

Runs as a CronJob or a Deployment. Imports ``lockgate``, never ``action``.
"""
