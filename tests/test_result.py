"""The readers' side of result.json (frameval/result.py) and the one version
sort key (frameval/versionkey.py): standard library, no files."""
import pytest

from frameval.versionkey import version_key

pytestmark = pytest.mark.fast


def test_version_key_orders_releases_pre_releases_and_labels():
    got = sorted(["3.10", "3.0.0", "2.13.0+cpu", "3.0.0rc10", "3.9", "3.0.0rc2", "2.13.0", "3.0.0b1", "1.9.1", "abc"],
                 key=version_key)
    assert got == ["1.9.1", "2.13.0", "2.13.0+cpu", "3.0.0b1", "3.0.0rc2", "3.0.0rc10", "3.0.0", "3.9", "3.10", "abc"]
    assert sorted(["²", "1", "x"], key=version_key) == ["1", "x", "²"]  # a digit that is not ASCII is text, no crash
