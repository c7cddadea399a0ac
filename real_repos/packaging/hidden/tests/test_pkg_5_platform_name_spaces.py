# SPECSNAP-CANARY packaging 7c4af13c-c8a2-465c-b3bd-96ecf9007700
import platform
import sysconfig

from packaging import tags


def _pretend_platform(monkeypatch, system, name):
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(sysconfig, "get_platform", lambda: name)


def test_platform_tags_replace_spaces(monkeypatch):
    _pretend_platform(monkeypatch, "Acme OS", "acme os-4.2 blue")
    assert list(tags.platform_tags()) == ["acme_os_4_2_blue"]


def test_generated_tags_have_no_spaces_in_platform(monkeypatch):
    _pretend_platform(monkeypatch, "Acme OS", "acme os")
    platforms = {t.platform for t in tags.cpython_tags((3, 11), abis=["cp311"])}
    platforms |= {t.platform for t in tags.compatible_tags((3, 11))}
    assert platforms == {"acme_os", "any"}


def test_sys_tags_usable_as_wheel_tags(monkeypatch):
    _pretend_platform(monkeypatch, "Acme OS", "acme os")
    first = next(iter(tags.sys_tags()))
    assert " " not in str(first)
    assert first.platform == "acme_os"
