# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import platform

import pytest

from packaging.markers import Marker, default_environment


@pytest.fixture
def untagged_build(monkeypatch):
    monkeypatch.setattr(platform, "python_version", lambda: "3.12.4+")


def test_full_version_marker_evaluates_on_untagged_build(untagged_build):
    assert Marker('python_full_version >= "3.8"').evaluate() == True
    assert Marker('python_full_version < "3.12"').evaluate() is False


def test_full_version_equality_on_untagged_build(untagged_build):
    assert Marker('python_full_version == "3.12.4"').evaluate() is True
    assert Marker('python_full_version != "3.12.4" or os_name != ""').evaluate() is True


def test_default_environment_reports_the_version_verbatim(untagged_build):
    assert default_environment()["python_full_version"] == "3.12.4+"
    assert Marker('python_full_version > "3.12.3"').evaluate() is True
