# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""smarty together with toc: the table of contents gets the plain text (#1438)."""
import markdown

EXTS = ['markdown.extensions.smarty', 'markdown.extensions.toc']


def test_toc_tokens_carry_smart_punctuation():
    md = markdown.Markdown(extensions=EXTS)
    out = md.convert('## Wait... what -- really?')
    assert out == '<h2 id="wait-what-really">Wait&hellip; what &ndash; really?</h2>'
    assert md.toc_tokens == [
        {'level': 2, 'id': 'wait-what-really', 'name': 'Wait&hellip; what &ndash; really?', 'children': []}
    ]


def test_toc_attribute_matches_header_text():
    md = markdown.Markdown(extensions=EXTS)
    md.convert('# Rock \'n\' roll "live"')
    assert md.toc == (
        '<div class="toc">\n<ul>\n'
        '<li><a href="#rock-n-roll-live">Rock &lsquo;n&rsquo; roll &ldquo;live&rdquo;</a></li>\n'
        '</ul>\n</div>\n'
    )
