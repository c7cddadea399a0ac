# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.specifiers import Specifier, SpecifierSet


def test_local_build_of_a_later_dev_release_is_greater():
    spec = Specifier(">6.2.0b1.dev40")
    assert spec.contains("6.2.0b1.dev41+build.7", prereleases=True) == True


def test_local_builds_of_later_pre_and_post_releases_are_greater():
    assert Specifier(">3.0rc1").contains("3.0rc2+ubuntu1", prereleases=True) is True
    assert Specifier(">3.0.dev5").contains("3.0.dev6+g1234", prereleases=True) is True
    assert Specifier(">3.0.post1").contains("3.0.post2+cu118") is True


def test_local_build_of_the_named_version_is_still_excluded():
    assert Specifier(">3.0rc1").contains("3.0rc1+ubuntu1", prereleases=True) is False
    assert Specifier(">3.0").contains("3.0+cu118") is False
    kept = SpecifierSet(">3.0rc1", prereleases=True).filter(
        ["3.0rc1+a", "3.0rc2+a", "3.0rc2"]
    )
    assert list(kept) == ["3.0rc2+a", "3.0rc2"]
