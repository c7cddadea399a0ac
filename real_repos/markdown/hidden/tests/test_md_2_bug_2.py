# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Image references written in the short form `![name]` (#894)."""
import markdown


def test_short_image_reference_renders_image():
    src = 'Logo: ![Company Logo]\n\n[company logo]: /static/logo.png "Our logo"'
    assert markdown.markdown(src) == (
        '<p>Logo: <img alt="Company Logo" src="/static/logo.png" title="Our logo" /></p>'
    )


def test_short_image_reference_inside_link():
    src = '[![badge]](https://ci.example.org/)\n\n[badge]: https://ci.example.org/badge.svg'
    assert markdown.markdown(src) == (
        '<p><a href="https://ci.example.org/">'
        '<img alt="badge" src="https://ci.example.org/badge.svg" /></a></p>'
    )
    # the full and collapsed forms keep working, and an undefined short image stays text
    assert markdown.markdown('![x][badge] ![badge][]\n\n[badge]: b.svg') == (
        '<p><img alt="x" src="b.svg" /> <img alt="badge" src="b.svg" /></p>'
    )
    assert markdown.markdown('![missing]') == '<p>![missing]</p>'
