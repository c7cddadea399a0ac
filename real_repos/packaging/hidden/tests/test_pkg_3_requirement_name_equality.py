# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
from packaging.requirements import Requirement


def test_requirements_differing_only_in_name_spelling_are_equal():
    first = Requirement("Zope.Interface[Docs]>=5.0")
    second = Requirement("zope-interface[Docs]>=5.0")
    assert (first == second) == True
    assert hash(first) == hash(second)
    # their text is kept as written
    assert str(first) == "Zope.Interface[Docs]>=5.0"


def test_name_spellings_deduplicate_in_a_set():
    reqs = {
        Requirement("typing_extensions>=4"),
        Requirement("Typing-Extensions>=4"),
        Requirement("typing.extensions>=4"),
    }
    assert len(reqs) == 1


def test_other_differences_still_make_requirements_unequal():
    assert Requirement("Ruamel.YAML>=0.17") != Requirement("ruamel-yaml>=0.18")
    assert Requirement("Ruamel.YAML>=0.17") != Requirement("ruamel-yaml-clib>=0.17")
    assert Requirement("A_B; os_name == 'nt'") == Requirement("a-b; os_name == 'nt'")
