"""shiftgit.digests: CPython's own sha modules for small data, hashlib's (OpenSSL) from BIG bytes on; one digest."""

from __future__ import annotations

import hashlib

import pytest

from shiftgit import digests
from shiftgit.git import rawgit
from shiftgit.ledger import validated


@pytest.mark.parametrize("width, reference", [(40, hashlib.sha1), (64, hashlib.sha256)])
def test_both_ways_give_the_same_digest(width: int, reference: object) -> None:
    data = b"ledger bytes\n" * (digests.BIG // 13 + 1)
    small, big = digests.hasher(width), digests.hasher(width, len(data))
    assert big is reference and small is not reference
    assert small(data).hexdigest() == big(data).hexdigest() == hashlib.new(big().name, data).hexdigest()


def test_a_big_ledger_has_the_blob_id_git_gives(tmp_path: object) -> None:
    data = b"{}" + b" " * digests.BIG + b"\n"
    header = b"blob %d\0" % len(data)
    assert validated.blob_id(data) == hashlib.sha1(header + data).hexdigest() == rawgit.object_id("blob", data, 40)
    assert validated.blob_ids(data) == (hashlib.sha1(header + data).hexdigest(),
                                        hashlib.sha256(header + data).hexdigest())


def test_hashlib_loaded_ahead_is_joined_before_its_first_hash() -> None:
    import subprocess
    import sys

    code = ("import sys, threading\n"
            "from shiftgit import digests\n"
            "assert 'hashlib' not in sys.modules\n"
            "digests.load_ahead(100)\n"
            "assert not digests._AHEAD  # small data: _sha1, no OpenSSL\n"
            "digests.load_ahead(digests.BIG)\n"
            "assert len(digests._AHEAD) == 1\n"
            "data = b'x' * digests.BIG\n"
            "import hashlib\n"
            "assert digests.blob_id(data) == hashlib.sha1(b'blob %d\\0' % len(data) + data).hexdigest()\n"
            "assert not digests._AHEAD and threading.active_count() == 1  # nothing left to fork beside\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
