# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Automatic e-mail links with an empty local part or an empty domain (#1165)."""
import markdown


def test_missing_local_part_is_not_a_mail_link():
    assert markdown.markdown('Write to <@example.com> now') == (
        '<p>Write to &lt;@example.com&gt; now</p>'
    )
    assert markdown.markdown('just <@>') == '<p>just &lt;@&gt;</p>'


def test_missing_domain_is_not_a_mail_link():
    out = markdown.markdown('Write to <support@> now')
    assert 'mailto' not in out
    assert '&#109;&#97;&#105;&#108;&#116;&#111;&#58;' not in out
    assert '<a ' not in out
    # a complete address still becomes an (obfuscated) mail link
    full = markdown.markdown('<ops@example.net>')
    assert full.startswith('<p><a href="&#109;&#97;&#105;&#108;&#116;&#111;&#58;&#111;&#112;&#115;&#64;')
    assert full.count('<a href=') == 1
