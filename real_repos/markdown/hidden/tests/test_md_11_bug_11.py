# SPECSNAP-CANARY markdown d1de9ed1-c9ff-4819-99fe-d4fc4730588b
"""smarty: a closing single and double quote side by side (#1514)."""
import markdown

SMARTY = ['markdown.extensions.smarty']


def test_single_inside_double_closing_together():
    out = markdown.markdown('He wrote: "Call it \'done.\'"', extensions=SMARTY)
    assert out == '<p>He wrote: &ldquo;Call it &lsquo;done.&rsquo;&rdquo;</p>'


def test_double_inside_single_and_before_parenthesis():
    assert markdown.markdown('\'Say "yes."\'', extensions=SMARTY) == (
        '<p>&lsquo;Say &ldquo;yes.&rdquo;&rsquo;</p>'
    )
    assert markdown.markdown('(She asked, "Who said \'no\'")', extensions=SMARTY) == (
        '<p>(She asked, &ldquo;Who said &lsquo;no&rsquo;&rdquo;)</p>'
    )
    # opening pairs are unchanged
    assert markdown.markdown('"\'Quoted\' words in a larger quote."', extensions=SMARTY) == (
        '<p>&ldquo;&lsquo;Quoted&rsquo; words in a larger quote.&rdquo;</p>'
    )
