"""The image build's cached wheelhouse is reused only while every wheel is one the lock lists."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.world import image


def test_a_cached_wheel_the_lock_does_not_list_is_found(tmp_path: Path) -> None:
    good = tmp_path / "click-8.1.7-py3-none-any.whl"
    good.write_bytes(b"the wheel pip downloaded")
    (tmp_path / "pip-24.0-py3-none-any.whl").write_bytes(b"the installer, not in the lock")
    lock = f"click==8.1.7 \\\n    --hash=sha256:{hashlib.sha256(good.read_bytes()).hexdigest()}\n"
    assert image._unlocked_wheels(tmp_path, lock) == []
    good.write_bytes(b"a wheel planted in the cache")
    assert image._unlocked_wheels(tmp_path, lock) == [good.name]
    (tmp_path / "evil-1.0-py3-none-any.whl").write_bytes(b"")
    assert image._unlocked_wheels(tmp_path, lock) == [good.name, "evil-1.0-py3-none-any.whl"]
