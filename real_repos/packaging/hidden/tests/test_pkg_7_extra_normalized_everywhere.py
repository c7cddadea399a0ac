# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.markers import Marker
from packaging.requirements import Requirement


def test_extra_after_another_clause_is_normalized():
    marker = Marker('python_version >= "3.8" and extra == "Test_Suite"')
    assert str(marker) == 'python_version >= "3.8" and extra == "test-suite"'


def test_every_extra_clause_is_normalized_in_a_requirement():
    req = Requirement('sphinx>=7; extra == "Docs.Build" or extra == "ALL__Extras"')
    assert str(req.marker) == 'extra == "docs-build" or extra == "all-extras"'
    assert str(req) == 'sphinx>=7; extra == "docs-build" or extra == "all-extras"'


def test_markers_differing_only_in_extra_spelling_are_equal():
    left = Marker('os_name == "nt" and extra == "GUI_Tools"')
    right = Marker('os_name == "nt" and extra == "gui-tools"')
    assert left == right
    assert hash(left) == hash(right)
    # reversed operands are normalized too
    assert str(Marker('os_name == "nt" or "GUI.Tools" == extra')) == (
        'os_name == "nt" or "gui-tools" == extra'
    )
