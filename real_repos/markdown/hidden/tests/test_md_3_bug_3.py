# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Text in the same block just before an admonition (#1092)."""
import markdown

EXT = ['markdown.extensions.admonition']


def test_paragraph_line_before_admonition_is_kept():
    src = 'Read this first.\n!!! warning "Careful"\n    Hot surface.\n'
    assert markdown.markdown(src, extensions=EXT) == (
        '<p>Read this first.</p>\n'
        '<div class="admonition warning">\n'
        '<p class="admonition-title">Careful</p>\n'
        '<p>Hot surface.</p>\n'
        '</div>'
    )


def test_several_lines_with_markup_before_admonition():
    src = 'one line\n*second* line\n!!! tip\n'
    assert markdown.markdown(src, extensions=EXT) == (
        '<p>one line\n<em>second</em> line</p>\n'
        '<div class="admonition tip">\n'
        '<p class="admonition-title">Tip</p>\n'
        '</div>'
    )
    # an admonition that starts its block is unchanged
    assert markdown.markdown('!!! note\n    body', extensions=EXT) == (
        '<div class="admonition note">\n'
        '<p class="admonition-title">Note</p>\n'
        '<p>body</p>\n'
        '</div>'
    )
