# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Link reference definitions whose id holds a left square bracket (#1209)."""
import markdown


def test_bracket_in_reference_id_is_not_a_definition():
    src = 'See [docs[] here.\n\n[docs[]: https://docs.example.org'
    assert markdown.markdown(src) == (
        '<p>See [docs[] here.</p>\n<p>[docs[]: https://docs.example.org</p>'
    )


def test_line_with_bracket_id_stays_in_document():
    md = markdown.Markdown()
    out = md.convert('[a[b]: http://x.example\n\nafter')
    assert out == '<p>[a[b]: http://x.example</p>\n<p>after</p>'
    assert md.references == {}
    # a normal definition is still taken as one
    assert markdown.markdown('[ok]: /u\n\n[ok] link') == '<p><a href="/u">ok</a> link</p>'
