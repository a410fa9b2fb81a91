"""The fleet seen from the registry: which revisions of an artifact are healthy in which clusters.

Every runner with ``spec.attest`` signs "healthy (or failing) in cluster X" about the digests
it applied, next to the artifact (``lockgate.signing.attest``). Read back and checked against
the runners' keys or keyless identities, those attestations answer "where does v1.4.2 run,
and since when?" with no access to any cluster. ``evidence`` reads them (the one I/O module:
tags, referrers, bundles, each referrer fetched and verified once); ``matrix`` turns them into
a table of revision x cluster (pure). ``lockgate fleet`` (action/) and the runner's status page
(runner/serve/web) both show what these two make.
"""
