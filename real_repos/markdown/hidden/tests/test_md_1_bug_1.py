# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""A horizontal rule on the line after a line of strong emphasis (#897)."""
import markdown


def test_rule_after_strong_emphasis_line():
    out = markdown.markdown('***Important notice***\n***')
    assert out == '<p><strong><em>Important notice</em></strong></p>\n<hr />'


def test_rule_after_strong_emphasis_then_paragraph():
    src = 'Intro line\n***bold italic*** words\n* * *\nclosing words'
    assert markdown.markdown(src) == (
        '<p>Intro line\n<strong><em>bold italic</em></strong> words</p>\n'
        '<hr />\n'
        '<p>closing words</p>'
    )
    # rules that stand alone keep working
    assert markdown.markdown('- - -') == '<hr />'
    assert markdown.markdown('text\n___\n') == '<p>text</p>\n<hr />'
