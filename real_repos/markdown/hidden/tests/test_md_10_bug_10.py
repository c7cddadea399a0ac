# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Raw <center> blocks are treated as inline HTML (#1481)."""
import markdown


def test_center_block_is_left_alone():
    out = markdown.markdown('<center>\n*Title* here\n</center>\n\nSome *text*.')
    assert out == '<center>\n*Title* here\n</center>\n\n<p>Some <em>text</em>.</p>'


def test_center_is_block_level():
    out = markdown.markdown('Intro\n\n<center><img src="a.png"></center>\n\nOutro')
    assert out == '<p>Intro</p>\n<center><img src="a.png"></center>\n\n<p>Outro</p>'
    md = markdown.Markdown()
    assert md.is_block_level('center') is True
    assert md.is_block_level('CENTER') is True
