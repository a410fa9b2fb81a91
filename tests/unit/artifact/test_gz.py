"""lockgate's gzip: the bytes are a function of the input alone, and every gzip reader reads them."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import shutil
import subprocess
import tarfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lockgate.artifact import gz


def _data(size: int = 3 * gz.BLOCK + 12345) -> bytes:
    rng = random.Random(5)
    words = [b"apiVersion", b"kind", b"metadata", b"name", b"spec", b"replicas", b"image"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b": " + rng.randbytes(6).hex().encode() + b"\n"
    return bytes(out[:size])


def _compress(data: bytes, sizes: list[int], *, threaded: bool = False) -> bytes:
    raw = io.BytesIO()
    writer = gz.GzipWriter(raw.write, threaded=threaded)
    view, i, k = memoryview(data), 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        writer.write(view[i : i + n])
        i, k = i + n, k + 1
    writer.close()
    return raw.getvalue()


def test_the_header_is_the_one_gzipfile_wrote() -> None:
    before = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=before, mtime=0, compresslevel=6) as f:
        f.write(b"x")
    assert _compress(b"x", [1])[:10] == before.getvalue()[:10] == gz.HEADER


def test_the_bytes_do_not_depend_on_how_the_input_is_split() -> None:
    data = _data()
    rng = random.Random(1)
    splits = [
        [len(data)],
        [1],
        [511, 7777, 123_456],
        [gz.BLOCK],
        [gz.BLOCK + 1],
        [rng.randint(1, 3 << 20) for _ in range(50)],
    ]
    # the one-byte split only over a prefix: it is slow in Python
    assert len({_compress(data[:50_000], [1]), _compress(data[:50_000], [50_000])}) == 1
    assert len({_compress(data, s) for s in splits if s != [1]}) == 1


def test_the_bytes_do_not_depend_on_threads() -> None:
    data = _data()
    alone = _compress(data, [gz.BLOCK])
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda n: _compress(data, [n]), [65536, 1 << 20, 3 << 20, 999_999] * 2))
    assert all(out == alone for out in together)


@pytest.mark.parametrize("size", [0, 1, gz.BLOCK, 3 * gz.BLOCK + 12345])
def test_pythons_gzip_and_our_reader_read_it(size: int) -> None:
    data = _data(size) if size else b""
    out = _compress(data, [100_000])
    assert gzip.decompress(out) == data
    assert gz.reader(io.BytesIO(out)).read() == data


def test_the_reader_reads_the_system_zlibs_gzip_and_several_members() -> None:
    data = _data(gz.BLOCK)
    assert (
        gz.reader(io.BytesIO(gzip.compress(data, mtime=0) + gzip.compress(b"tail"))).read() == data + b"tail"
    )


def test_the_reader_refuses_a_wrong_crc() -> None:
    out = bytearray(_compress(b"hello world" * 1000, [4096]))
    out[-8] ^= 1
    with pytest.raises(gz.ERRORS):
        gz.reader(io.BytesIO(bytes(out))).read()


def test_gzip_and_tar_read_it(tmp_path: Path) -> None:
    # gzip and tar are part of every machine of this kind: missing, the test fails (never skips)
    missing = [tool for tool in ("gzip", "tar") if shutil.which(tool) is None]
    assert not missing, f"{', '.join(missing)} not installed: the interop check needs them"
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w", format=tarfile.PAX_FORMAT) as tar:
        body = _data(gz.BLOCK + 7)
        info = tarfile.TarInfo("apps/big.yaml")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    layer = tmp_path / "layer.tgz"
    layer.write_bytes(_compress(plain.getvalue(), [65536]))
    subprocess.run(["gzip", "-t", str(layer)], check=True)
    (tmp_path / "out").mkdir()
    subprocess.run(["tar", "xzf", str(layer), "-C", str(tmp_path / "out")], check=True)
    extracted = (tmp_path / "out" / "apps" / "big.yaml").read_bytes()
    assert hashlib.sha256(extracted).digest() == hashlib.sha256(body).digest()


def test_the_worker_thread_writes_the_same_bytes() -> None:
    data = _data()
    alone = _compress(data, [gz.BLOCK])
    for sizes in ([len(data)], [511, 7777, 123_456], [gz.BLOCK + 1]):
        assert _compress(data, sizes, threaded=True) == alone
    assert gzip.decompress(alone) == data


def test_the_worker_threads_failure_reaches_the_writer() -> None:
    def emit(data: bytes) -> None:
        if len(data) > len(gz.HEADER):
            raise OSError("disk full")

    writer = gz.GzipWriter(emit, threaded=True)
    with pytest.raises(OSError, match="disk full"):
        for _ in range(20):
            writer.write(_data(gz.BLOCK))
        writer.close()
    writer.abort()
    assert not any(t.name == "lockgate-deflate" for t in threading.enumerate())


def test_abort_stops_the_worker() -> None:
    writer = gz.GzipWriter(io.BytesIO().write, threaded=True)
    writer.write(_data(3 * gz.BLOCK))
    writer.abort()
    assert not any(t.name == "lockgate-deflate" for t in threading.enumerate())
