"""display/result.py: a run's result as the cell's own output, Markdown a model wrote made safe in one place."""

from __future__ import annotations

from deepagent_magics.display import ResultOutput, safe_markdown


def test_raw_html_is_escaped_and_markdown_is_left_to_render():
    text = "**Done**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script><img src=x onerror=y>"
    safe = safe_markdown(text)
    assert "<script" not in safe and "<img" not in safe
    assert "&lt;script>alert(1)&lt;/script>&lt;img src=x onerror=y>" in safe
    assert safe.startswith("**Done**\n\n| a | b |\n|---|---|\n| 1 | 2 |")


def test_code_stays_as_written():
    text = "Use `a < b` here:\n\n```python\nif x < 3:\n    print('<b>')\n```\nthen <b>bold</b>"
    safe = safe_markdown(text)
    assert "`a < b`" in safe and "if x < 3:\n    print('<b>')" in safe  # code renders literally: nothing to escape
    assert safe.endswith("then &lt;b>bold&lt;/b>")


def test_the_output_has_markdown_and_the_plain_text_fallback():
    bundle = ResultOutput("<i>x</i> 42")._repr_mimebundle_()
    assert bundle == {"text/markdown": "&lt;i>x&lt;/i> 42", "text/plain": "<i>x</i> 42"}
    assert ResultOutput(42)._repr_mimebundle_()["text/plain"] == "42"
