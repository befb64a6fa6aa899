"""safe_text.py: text a model may have written, made safe wherever it is shown (hostile cases at length:
tests/adversarial/test_model_text_shown.py, test_model_urls.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.safe_text import (
    SafeMarkdown,
    clean_html,
    escape,
    markdown_bundle,
    markdown_html,
    plain,
    safe_url,
)


def test_escape_quotes_attribute_values_too():
    assert escape('pending" onmouseover="x') == "pending&quot; onmouseover=&quot;x"
    assert escape("<b>&'") == "&lt;b&gt;&amp;&#x27;"
    assert escape(3) == "3"


@pytest.mark.parametrize("value, image, expected", [
    ("https://example.org/a?b=1", False, "https://example.org/a?b=1"),
    ("mailto:me@example.org", False, "mailto:me@example.org"),
    ("javascript:alert(1)", False, None),
    ("https://example.org/p.png", True, None),  # an image from elsewhere would send a request
    ("plots/p.png", True, "./plots/p.png"),
    ("#part", False, "#part"),
    ("/\\evil.example/p.png", True, None),
    ("//evil.example/x", False, None),
    ("../../escape", False, None),
])
def test_a_url_is_kept_only_where_a_browser_keeps_it_here(value, image, expected):
    assert safe_url(value, image=image) == expected


def test_markdown_renders_and_what_is_not_allowed_goes():
    html = markdown_html("# Title\n\n**bold** [ok](https://example.org) [bad](javascript:x)\n\n"
                         "<script>alert(1)</script><img src=x onerror=alert(1)>")
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert '<a href="https://example.org/">ok</a>' in html  # written as parsed
    assert "javascript" not in html and "<script" not in html and "onerror" not in html
    assert "alert(1)" in html  # the script's text stays, as text


def test_tables_and_code_classes_survive_styles_do_not():
    html = markdown_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```")
    assert "<table>" in html and '<code class="language-python">' in html
    assert clean_html('<p style="color:red" class="x">t</p>') == "<p>t</p>"


def test_the_bundle_is_sanitised_html_and_plain_text_never_trusted_markdown():
    bundle = markdown_bundle("**hi**\x1b[2J")
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/html"].startswith('<div class="deepagent-result">') and "<strong>hi</strong>" in bundle["text/html"]
    assert bundle["text/plain"] == "**hi**\\x1b[2J"
    assert SafeMarkdown("**hi**")._repr_mimebundle_() == markdown_bundle("**hi**")


def test_plain_shows_control_characters_as_escapes_and_keeps_newlines_and_tabs():
    assert plain("a\x1b]0;title\x07b\rc\u202ed\n\te") == "a\\x1b]0;title\\x07b\\rc\\u202ed\n\te"
