"""The documentation holds together: the README stays a first hour (reference material lives in
docs/), every page of docs/ is listed on its index, and no relative link is broken."""

from __future__ import annotations

import re

from conftest import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md"))


def test_the_readme_is_a_first_hour_not_a_manual():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move reference material into docs/"
    text = "\n".join(lines)
    for command in ("./install.sh", "snakemake --cores 2", "pytest"):
        assert f"\n{command}" in text, command  # the three commands, each at the start of a line
    assert "docs/index.md" in text


def test_every_page_is_on_the_index():
    index = (ROOT / "docs" / "index.md").read_text()
    missing = [p.name for p in PAGES if p.name != "index.md" and f"]({p.name})" not in index]
    assert not missing, missing


def test_no_relative_link_is_broken():
    broken = []
    for page in [ROOT / "README.md", ROOT / "EXTERNAL_AGENT_PROTOCOL.md", *PAGES]:
        for match in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", page.read_text()):
            target = match.group(1)
            if not target.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken
