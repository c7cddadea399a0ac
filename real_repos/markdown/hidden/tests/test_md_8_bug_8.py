# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""smarty: an apostrophe-s right after inline markup (#1305)."""
import markdown

SMARTY = ['markdown.extensions.smarty']


def test_possessive_after_emphasis():
    out = markdown.markdown("*Custer*'s Last Stand", extensions=SMARTY)
    assert out == '<p><em>Custer</em>&rsquo;s Last Stand</p>'


def test_possessive_after_strong_code_and_link():
    out = markdown.markdown("**Ada**'s notes and `grep`'s flags", extensions=SMARTY)
    assert out == '<p><strong>Ada</strong>&rsquo;s notes and <code>grep</code>&rsquo;s flags</p>'
    assert markdown.markdown("[Bob](/bob)'s page", extensions=SMARTY) == (
        '<p><a href="/bob">Bob</a>&rsquo;s page</p>'
    )
    # ordinary quotes are unchanged
    assert markdown.markdown("She said 'sure'.", extensions=SMARTY) == (
        '<p>She said &lsquo;sure&rsquo;.</p>'
    )
