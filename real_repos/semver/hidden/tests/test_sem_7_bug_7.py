# SPECSNAP-CANARY semver 3ca47c88-8c45-487d-9f79-106ae7aefef5
import pytest

from semver import Version


@pytest.mark.parametrize("token", ["rc.", "pre+meta", ".dev", "dev..2", "dev.01", "r c", "\u00e9t\u00e9"])
def test_bump_prerelease_rejects_tokens_outside_the_grammar(token):
    with pytest.raises(ValueError):
        Version(6, 1, 0).bump_prerelease(token)


@pytest.mark.parametrize("token", ["build+meta", "ci.", "a..b", "x/y"])
def test_bump_build_rejects_tokens_outside_the_grammar(token):
    with pytest.raises(ValueError):
        Version(6, 1, 0, prerelease="rc.1").bump_build(token)


def test_valid_tokens_still_accepted_after_a_rejected_one():
    base = Version.parse("0.8.1")
    with pytest.raises(ValueError):
        base.bump_prerelease("nightly+2024")
    assert str(base.bump_prerelease("alpha.beta")) == "0.8.1-alpha.beta.1"
    assert str(base.bump_build("exp-7.sha")) == "0.8.1+exp-7.sha.1"
    assert str(base.bump_build("")) == "0.8.1+1"
