# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Lines after a header that opens an item of a loose list (#1443)."""
import markdown


def test_second_item_text_after_header_is_a_paragraph():
    src = '- ### Apples\n    Red ones.\n\n- ### Pears\n    Green ones.'
    assert markdown.markdown(src) == (
        '<ul>\n'
        '<li>\n<h3>Apples</h3>\n<p>Red ones.</p>\n</li>\n'
        '<li>\n<h3>Pears</h3>\n<p>Green ones.</p>\n</li>\n'
        '</ul>'
    )


def test_several_lines_after_header_in_loose_list():
    src = '* # Setup\n    Install it.\n\n* ## Usage\n    Run *it*.\n    Twice.\n\n* plain'
    out = markdown.markdown(src)
    assert out == (
        '<ul>\n'
        '<li>\n<h1>Setup</h1>\n<p>Install it.</p>\n</li>\n'
        '<li>\n<h2>Usage</h2>\n<p>Run <em>it</em>.\nTwice.</p>\n</li>\n'
        '<li>\n<p>plain</p>\n</li>\n'
        '</ul>'
    )
    assert '<pre>' not in out
