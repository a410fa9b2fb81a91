"""CLI glue for signing: ``lockgate keygen``, ``lockgate sign`` and ``lockgate verify``.

The work is in ``lockgate.signing``; these commands read flags, files and passwords,
make one library call and print the result.
"""
