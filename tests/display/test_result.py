"""display/result.py: a run's result is the cell's own output, a model's Markdown shown only sanitised."""

from __future__ import annotations

from html.parser import HTMLParser

from IPython.core.interactiveshell import InteractiveShell

from deepagent_magics.display import show_result


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _shown(result, monkeypatch) -> dict:
    bundles = []
    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, *a, **k: bundles.append(data))
    show_result(result)
    assert len(bundles) == 1
    return bundles[0]


def test_the_result_renders_as_html_and_keeps_a_plain_text_fallback(monkeypatch):
    bundle = _shown("**Done**\n\n| a | b |\n|---|---|\n| 1 | 2 |", monkeypatch)
    assert "text/markdown" not in bundle  # JupyterLab renders Markdown output as trusted
    assert "<strong>Done</strong>" in bundle["text/html"] and "<table>" in bundle["text/html"]
    assert bundle["text/plain"].startswith("**Done**")


def test_script_and_handlers_a_model_wrote_do_not_survive(monkeypatch):
    bundle = _shown("<script>alert(1)</script><img src=x onerror=y> [x](javascript:alert(1))", monkeypatch)
    parser = _Tags()
    parser.feed(bundle["text/html"])
    assert "script" not in [tag for tag, _ in parser.tags]
    assert not any(name.startswith("on") for _, attrs in parser.tags for name in attrs)
    assert not any(value and value.lower().startswith("javascript:") for _, attrs in parser.tags
                   for value in attrs.values())
