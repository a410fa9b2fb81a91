"""Signing and verification of artifacts, shared by the CI side and the runner.

Two kinds of signature, both in the layouts cosign and Flux read:

* key signatures: a cosign key pair (``keys``), the simple-signing payload
  (``simplesigning``) stored as a ``sha256-<hex>.sig`` manifest (``layout``, ``store``);
* keyless signatures: a Sigstore bundle around a DSSE in-toto statement (``statement``),
  stored as an OCI 1.1 referrer with the tag-schema fallback index.

``verify.verify`` resolves a reference to a digest once, finds the signatures attached to
that digest and returns a ``VerifiedArtifact`` or raises ``VerificationError``.
"""
