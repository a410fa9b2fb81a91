"""The install step's check of a cached venv: only the files of the locked wheels, unchanged.

The venvs here are real (``venv.EnvBuilder``, what the step's ``python -m venv`` writes) and
the wheel is a real zip with a RECORD; the files are put where pip puts them, so the check
sees what it sees after a real install (tests/integration/test_action_act.py runs pip).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from action.github import install

ROOT = Path(__file__).resolve().parents[3]
FILES = {
    "demo/__init__.py": b"VALUE = 1\n",
    "demo/core.py": b"def run() -> int:\n    return 1\n",
    "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}


def _record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(directory: Path, files: dict[str, bytes] = FILES) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / "demo-1.0-py3-none-any.whl"
    record = "".join(f"{name},sha256={_record_hash(data)},{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("demo-1.0.dist-info/RECORD", record + "demo-1.0.dist-info/RECORD,,\n")
    return wheel


def _lock(*wheels: Path) -> dict[str, frozenset[str]]:
    text = "".join(f"demo==1.0 \\\n    --hash=sha256:{install.sha256_file(w)}\n" for w in wheels)
    return install.lock_hashes(text)


def _installed(tmp_path: Path) -> tuple[Path, Path]:
    """A venv holding the demo wheel as pip installs it, and its wheels directory."""
    target = tmp_path / "deps-key"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(target)
    for script in (target / "bin").iterdir():
        if not script.is_symlink():
            script.unlink()  # the install step removes the activate scripts
    site = target / install.site_packages()
    for name, data in FILES.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    (site / "demo-1.0.dist-info" / "INSTALLER").write_bytes(b"pip\n")
    (site / "demo-1.0.dist-info" / "REQUESTED").write_bytes(b"")
    (site / "demo-1.0.dist-info" / "RECORD").write_text("rewritten by pip\n")
    _wheel(install.wheels_dir(target))
    return target, install.wheels_dir(target)


def test_a_freshly_installed_venv_passes_and_byte_code_is_deleted_not_trusted(tmp_path: Path) -> None:
    target, wheels = _installed(tmp_path)
    cache = target / install.site_packages() / "demo" / "__pycache__"
    cache.mkdir()
    (cache / "core.cpython-311.pyc").write_bytes(b"evil byte code")
    install.verify(target, wheels, _lock(next(wheels.iterdir())))
    assert not cache.exists()


def _site(target: Path) -> Path:
    return target / install.site_packages()


def _add_pth(target: Path) -> None:
    (_site(target) / "evil.pth").write_text("import os; os.system('id')\n")


def _change_module(target: Path) -> None:
    with open(_site(target) / "demo" / "core.py", "a") as stream:
        stream.write("import os; os.system('id')\n")


def _remove_module(target: Path) -> None:
    (_site(target) / "demo" / "core.py").unlink()


def _add_script(target: Path) -> None:
    (target / "bin" / "lockgate").write_text("#!/bin/sh\nexec evil\n")


def _repoint_python(target: Path) -> None:
    (target / "bin" / "python").unlink()
    (target / "bin" / "python").symlink_to("/bin/sh")


def _change_home(target: Path) -> None:
    cfg = target / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("home = ", "home = /tmp/evil-python"))


def _fake_installer_file(target: Path) -> None:
    (_site(target) / "demo-1.0.dist-info" / "INSTALLER").write_text("import os\n")


def _module_as_link(target: Path) -> None:
    module = _site(target) / "demo" / "core.py"
    copy = target.parent / "core.py"
    copy.write_bytes(module.read_bytes())
    module.unlink()
    module.symlink_to(copy)  # same bytes today, anything tomorrow


@pytest.mark.parametrize(
    "poison, reason",
    [
        (_add_pth, "evil.pth: not a file of any locked wheel"),
        (_change_module, "demo/core.py: its content differs from the locked wheel's"),
        (_remove_module, "demo/core.py: missing"),
        (_add_script, "bin/lockgate: not a file of any locked wheel"),
        (_repoint_python, "bin/python: a link venv does not make"),
        (_change_home, "pyvenv.cfg is not what venv writes for this interpreter"),
        (_fake_installer_file, "INSTALLER: not what pip writes"),
        (_module_as_link, "demo/core.py: a link venv does not make"),
    ],
    ids=lambda value: getattr(value, "__name__", "")[1:] if callable(value) else "",
)
def test_a_poisoned_venv_is_refused_naming_the_file(
    tmp_path: Path, poison: Callable[[Path], None], reason: str
) -> None:
    target, wheels = _installed(tmp_path)
    poison(target)
    with pytest.raises(install.Poisoned, match=re.escape(reason)):
        install.verify(target, wheels, _lock(next(wheels.iterdir())))


def test_a_wheel_whose_hash_the_lock_does_not_list_is_refused_with_its_files(tmp_path: Path) -> None:
    """The attacker rewrites a module and the kept wheel (and its RECORD) to match: the
    wheel's own sha256 is then no longer one the lock lists."""
    target, wheels = _installed(tmp_path)
    lock = _lock(next(wheels.iterdir()))
    evil = dict(FILES, **{"demo/core.py": b"import os; os.system('id')\n"})
    _wheel(wheels, evil)
    (_site(target) / "demo" / "core.py").write_bytes(evil["demo/core.py"])
    with pytest.raises(install.Poisoned, match=re.escape("demo-1.0-py3-none-any.whl: its sha256 is not")):
        install.verify(target, wheels, lock)


def test_the_lock_is_read_whole_and_an_unhashed_entry_is_refused() -> None:
    a, b, c = ("--hash=sha256:" + x * 64 for x in "abc")
    text = (
        f"# a comment\nclick==8.1.7 \\\n    {a} \\\n    {b}\n"
        f"Google_RE2==1.1 ; python_version >= '3.11' \\\n    {c}\n    # via x\n"
    )
    assert install.lock_hashes(text) == {
        "click": frozenset({"a" * 64, "b" * 64}),
        "google-re2": frozenset({"c" * 64}),
    }
    with pytest.raises(install.InstallError, match=re.escape("requirements.lock: 'click>=8' is not")):
        install.lock_hashes("click>=8\n")


def test_the_venv_key_follows_the_lock_and_lives_in_the_tool_cache(tmp_path: Path) -> None:
    (tmp_path / install.LOCK).write_text("a==1 --hash=sha256:" + "a" * 64 + "\n")
    target = install.venv_dir(tmp_path, {"RUNNER_TOOL_CACHE": "/opt/cache", "RUNNER_TEMP": "/tmp/x"})
    assert target.parent == Path("/opt/cache/lockgate") and target.name.startswith("deps-")
    assert install.venv_dir(tmp_path, {"RUNNER_TEMP": "/tmp/x"}).parent == Path("/tmp/x/lockgate")
    (tmp_path / install.LOCK).write_text("a==2 --hash=sha256:" + "b" * 64 + "\n")
    assert install.venv_dir(tmp_path, {"RUNNER_TOOL_CACHE": "/opt/cache"}) != target
    with pytest.raises(install.InstallError, match="neither RUNNER_TOOL_CACHE nor RUNNER_TEMP"):
        install.venv_dir(tmp_path, {})


def test_the_launcher_runs_the_checkouts_lockgate_without_the_working_directory(tmp_path: Path) -> None:
    text = install.launcher(Path("/a b/action"), Path("/c/deps-1"), Path("/t/pycache"))
    assert text.startswith("#!/bin/sh\n")
    command = (
        "PYTHONPATH='/a b/action' PYTHONPYCACHEPREFIX=/t/pycache exec /c/deps-1/bin/python -P -m lockgate"
    )
    assert command in text


def _venv(cache: Path, name: str, used: float) -> Path:
    target = cache / name
    target.mkdir(parents=True)
    install.wheels_dir(target).mkdir()
    install.stamp_path(target).touch()
    os.utime(install.stamp_path(target), (used, used))
    return target


def test_prune_keeps_the_most_recently_used_and_those_in_use(tmp_path: Path) -> None:
    cache = tmp_path / "lockgate"
    current = _venv(cache, "deps-current", 1)  # in use now, whatever its stamp says
    recent = _venv(cache, "deps-recent", 100)
    busy = _venv(cache, "deps-busy", 20)
    old = _venv(cache, "deps-old", 10)
    next_ = _venv(cache, "deps-next", 50)
    legacy = cache / "0.1.0-0123456789abcdef"  # lockgate itself in it, trusted by a stamp
    legacy.mkdir()
    (legacy / ".lockgate-complete").write_text("0.1.0\n")
    (cache / "not-a-venv").mkdir()
    with open(install.lock_path(busy), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # a run step of that venv is running
        removed = install.prune(cache, current, keep=3)
    assert removed == [old, legacy]
    assert not install.wheels_dir(old).exists() and not install.stamp_path(old).exists()
    assert sorted(p.name for p in cache.iterdir() if p.is_dir() and not p.name.endswith(".wheels")) == [
        "deps-busy", "deps-current", "deps-next", "deps-recent", "not-a-venv",
    ]  # fmt: skip
    assert next_.is_dir() and recent.is_dir()
