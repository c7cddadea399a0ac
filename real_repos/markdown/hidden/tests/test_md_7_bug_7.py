# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""Headers outside toc_depth lose their ids, permalinks and anchor links (#1107)."""
import markdown
from markdown.extensions.toc import TocExtension


def test_permalinks_on_headers_below_toc_depth():
    md = markdown.Markdown(extensions=[TocExtension(permalink=True, toc_depth=1)])
    out = md.convert('# Guide\n## Install\n### Linux')
    assert out == (
        '<h1 id="guide">Guide<a class="headerlink" href="#guide" title="Permanent link">&para;</a></h1>\n'
        '<h2 id="install">Install<a class="headerlink" href="#install" title="Permanent link">&para;</a></h2>\n'
        '<h3 id="linux">Linux<a class="headerlink" href="#linux" title="Permanent link">&para;</a></h3>'
    )
    # the table of contents itself is still cut at the depth
    assert md.toc_tokens == [{'level': 1, 'id': 'guide', 'name': 'Guide', 'children': []}]


def test_anchorlinks_and_ids_above_toc_range():
    md = markdown.Markdown(extensions=[TocExtension(anchorlink=True, toc_depth='2-3')])
    out = md.convert('# Title\n## Usage')
    assert out == (
        '<h1 id="title"><a class="toclink" href="#title">Title</a></h1>\n'
        '<h2 id="usage"><a class="toclink" href="#usage">Usage</a></h2>'
    )
    assert md.toc_tokens == [{'level': 2, 'id': 'usage', 'name': 'Usage', 'children': []}]
    plain = markdown.markdown('## Sub\n### Deep', extensions=[TocExtension(toc_depth=2)])
    assert plain == '<h2 id="sub">Sub</h2>\n<h3 id="deep">Deep</h3>'
