"""pytest plugin: the private Sigstore stack (``tests.world.sigstore``) as a session fixture.

Register it in tests/conftest.py with ``pytest_plugins = ["tests.world.sigstore_fixtures"]``
(or pass ``-p tests.world.sigstore_fixtures``). It uses the ``world_dir`` fixture from there.
Like the rest of the world, a stack that cannot start fails the test with the log tail of
the component that did not come up; it never skips.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.world.sigstore import SigstoreStack, start_sigstore


@pytest.fixture(scope="session")
def sigstore_stack(world_dir: Path) -> Iterator[SigstoreStack]:
    """OIDC issuer + Fulcio + CT log + Rekor v2 + TSA on loopback, with its trust files."""
    stack = start_sigstore(world_dir)
    yield stack
    stack.stop()
