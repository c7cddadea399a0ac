# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import pytest

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version


def test_wheel_with_unparsable_version_raises_invalid_wheel_filename():
    with pytest.raises(InvalidWheelFilename):
        parse_wheel_filename("demo_pkg-2.x.final-py3-none-any.whl")
    with pytest.raises(InvalidWheelFilename):
        parse_wheel_filename("demo_pkg-latest-7-cp311-cp311-linux_x86_64.whl")


def test_sdist_with_unparsable_version_raises_invalid_sdist_filename():
    with pytest.raises(InvalidSdistFilename):
        parse_sdist_filename("demo_pkg-nightly.tar.gz")
    with pytest.raises(InvalidSdistFilename):
        parse_sdist_filename("demo_pkg-1.0.0beta.zip.zip")


def test_good_filenames_still_parse_after_rejecting_a_bad_one():
    caught = None
    try:
        parse_sdist_filename("demo_pkg-v1..2.tar.gz")
    except InvalidSdistFilename as exc:
        caught = type(exc).__name__
    assert caught == "InvalidSdistFilename"
    assert parse_sdist_filename("Demo_Pkg-1.2.tar.gz") == ("demo-pkg", Version("1.2"))
