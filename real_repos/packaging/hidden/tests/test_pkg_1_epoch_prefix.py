# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.specifiers import Specifier, SpecifierSet


def test_long_prefix_with_epoch_matches_shorter_version():
    spec = Specifier("==3!2.0.0.0.*")
    assert spec.contains("3!2.0") == True
    assert spec.contains("3!2.0.0") is True
    assert "3!2.0.0.0.7" in spec
    # a different epoch, or a different release, still does not match
    assert spec.contains("2.0") is False
    assert spec.contains("3!2.1") is False


def test_prefix_with_epoch_matches_version_with_trailing_zeros():
    assert Specifier("==5!1.0.*").contains("5!1.0.0") == True
    assert Specifier("==5!1.*").contains("5!1.0.0") is True
    assert Specifier("==5!1.0.0.*").contains("5!1.0") is True
    assert Specifier("==1.0.0.*").contains("5!1.0") is False


def test_exclusion_prefix_with_epoch():
    assert Specifier("!=5!1.0.0.*").contains("5!1.0") == False
    assert Specifier("!=5!1.0.0.*").contains("5!1.1") is True


def test_compatible_release_with_epoch_and_long_version():
    spec = SpecifierSet("~=4!3.1.0.0")
    candidates = ["4!3.1.0", "4!3.1.0.9", "4!3.1.1", "3.1.0.5"]
    assert [str(v) for v in spec.filter(candidates)] == ["4!3.1.0", "4!3.1.0.9"]
