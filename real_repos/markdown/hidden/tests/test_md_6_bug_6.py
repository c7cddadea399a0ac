# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""The [TOC] marker followed by more content in the same paragraph (#1160)."""
import markdown

TOC = 'markdown.extensions.toc'
NL2BR = 'markdown.extensions.nl2br'


def test_marker_line_with_nl2br_keeps_following_text():
    out = markdown.markdown('[TOC]\nSee the list above.', extensions=[TOC, NL2BR])
    assert out == '<p>[TOC]<br />\nSee the list above.</p>'


def test_marker_followed_by_inline_markup_keeps_paragraph():
    out = markdown.markdown('[TOC] *is* the marker\n\n# Head', extensions=[TOC])
    assert out == '<p>[TOC] <em>is</em> the marker</p>\n<h1 id="head">Head</h1>'
    # a paragraph of the marker alone is still replaced by the table of contents
    alone = markdown.markdown('[TOC]\n\n# Head', extensions=[TOC, NL2BR])
    assert alone == (
        '<div class="toc">\n<ul>\n<li><a href="#head">Head</a></li>\n</ul>\n</div>\n'
        '<h1 id="head">Head</h1>'
    )
