"""Everything a model wrote is escaped where it is shown (issue 21, item 2).

The attack: a record planted in ``.deepagent/runs/`` (or a run whose model writes it) with a todo
status ``pending" style="..." onmouseover="..."`` (it broke out of the dashboard's ``class``
attribute: ipywidgets' ``HTML`` sets ``innerHTML``), a result with ``<img onerror>``, ``<script>``
and a ``javascript:`` link (shown as trusted Markdown), and terminal escape sequences. Shown through
``%deepagent_trace`` (dashboard and text), the result display after a run, and an export converted
with ``nbconvert --to html``: every HTML produced is parsed with ``html.parser`` and holds no
element or attribute that runs script.
"""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser

import nbformat
import pytest
from ipywidgets.widgets.widget import _instances

from deepagent_magics.testing import ScriptedLM

XSS = "XSS-MARK"
STATUS = f'pending" style="position:fixed;width:100%;height:100%" onmouseover="alert(\'{XSS}\')'
RESULT = (f"# Report\n<script>alert('{XSS}')</script>\n<img src=x onerror=\"alert('{XSS}')\">\n"
          f"[click](javascript:alert('{XSS}')) <a href=\"JaVaScRiPt:alert('{XSS}')\">b</a>\n"
          f"<svg onload=\"alert('{XSS}')\"></svg><iframe src=\"javascript:alert('{XSS}')\"></iframe>\n"
          f"<div style=\"background:url(javascript:alert('{XSS}'))\" onclick=\"alert('{XSS}')\">styled</div>\n"
          f"![tracker](https://attacker.example/{XSS}.png)\n\nSee **bold** and [docs](https://example.org).\n"
          f"\x1b]0;{XSS}-title\x07\x1b[2J\rspoofed line")
HTML_TEXT = f"<img src=x onerror=\"alert('{XSS}')\"><script>alert('{XSS}')</script>"


class Live(HTMLParser):
    """Collects what would run script: script/iframe/object elements, on* handlers, javascript: URLs, styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "svg", "math", "base", "meta", "link", "form"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            if name in ("href", "src", "action", "formaction", "xlink:href") and (
                    value.startswith(("javascript:", "vbscript:", "data:text")) or "attacker.example" in value):
                self.found.append(f"{tag} {name}={value[:40]}")
            if name == "style" and XSS.lower() in value:
                self.found.append(f"{tag} style")

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def live_parts(markup: str) -> list[str]:
    parser = Live()
    parser.feed(markup)
    parser.close()
    return parser.found


def _plant(workspace, run_id="planted-xss"):
    child = {"id": "child-xss", "task": HTML_TEXT, "status": "finished", "depth": 1, "result": HTML_TEXT,
             "steps": [{"index": 1, "reasoning": HTML_TEXT, "code": HTML_TEXT, "output": HTML_TEXT}],
             "todos": [{"content": HTML_TEXT, "status": STATUS}]}
    record = {"format": "deepagent-run/1", "id": run_id, "task": HTML_TEXT, "status": "finished", "depth": 0,
              "started_at": time.time(), "ended_at": time.time() + 1, "result": RESULT, "error": HTML_TEXT,
              "todos": [{"content": HTML_TEXT, "status": STATUS}, {"content": "ok", "status": "completed"}],
              "files_written": ["<img src=x onerror=alert(1)>.md"],
              "steps": [{"index": 1, "reasoning": HTML_TEXT, "code": "x = 1  # " + HTML_TEXT,
                         "output": HTML_TEXT, "children": [child]}],
              "config": {"workspace": str(workspace), "lm": HTML_TEXT}}
    path = workspace / ".deepagent" / "runs" / f"{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return run_id


def _shown_html(widgets) -> tuple[list[str], list[str]]:
    """The HTML the widgets show, and the Markdown their outputs would render as trusted."""
    html, markdown = [], []
    for widget in widgets:
        value = getattr(widget, "value", None)
        if type(widget).__name__ == "HTML" and isinstance(value, str):
            html.append(value)
        for output in getattr(widget, "outputs", ()) or ():
            data = output.get("data") or {}
            html += [data[mime] for mime in ("text/html",) if mime in data]
            markdown += [data[mime] for mime in ("text/markdown",) if mime in data]
    return html, markdown


def test_trace_dashboard_of_a_planted_record_has_nothing_live(ip, tmp_path):
    run_id = _plant(tmp_path)
    before = set(_instances)
    ip.run_line_magic("deepagent_trace", f"{run_id} --display widgets")
    made = [_instances[key] for key in set(_instances) - before]
    shown, trusted_markdown = _shown_html(made)
    assert [part for html in shown for part in live_parts(html)] == []
    assert trusted_markdown == []  # JupyterLab renders a session's Markdown output as trusted, raw HTML live
    assert any("Report" in html and "<strong>bold</strong>" in html for html in shown)  # Markdown still renders
    assert any('href="https://example.org/"' in html for html in shown)  # as a browser parses it
    todos = next(html for html in shown if html.startswith('<div class="dag-todos">'))
    assert "onmouseover" in todos  # shown as text: the status is there, inside its quoted attribute...
    classes = [dict(attrs).get("class", "") for attrs in _start_tags(todos)]
    assert any("onmouseover" in value for value in classes)  # ...whole, as one class attribute value


def _start_tags(markup):
    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append(attrs)

    Tags().feed(markup)
    return tags


def test_a_runs_result_is_displayed_sanitised_not_as_trusted_markdown(ip):
    from IPython.utils.capture import capture_output

    ip.user_ns["lm"] = ScriptedLM([("Answer", f"SUBMIT(result={RESULT!r})")])
    with capture_output() as captured:  # the fixture's shell is quiet: the magic displays the result itself
        ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "answer")
    bundles = [output.data for output in captured.outputs]
    assert bundles, "the result was not displayed"
    for data in bundles:
        assert "text/markdown" not in data
        assert live_parts(data["text/html"]) == [], data["text/html"]
        assert "<h1>Report</h1>" in data["text/html"]


def test_trace_as_text_never_sends_a_models_escape_sequences(ip, tmp_path, capsys):
    run_id = _plant(tmp_path)
    capsys.readouterr()
    ip.run_line_magic("deepagent_trace", f"{run_id} --display text")
    ip.run_line_magic("deepagent_runs", "")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "\\x1b]0;" in out and "spoofed line" in out  # shown, as escapes


def test_an_export_converted_to_html_keeps_no_model_script(ip, tmp_path):
    from nbconvert import HTMLExporter

    run_id = _plant(tmp_path)
    target = tmp_path / "export.ipynb"
    ip.run_line_magic("deepagent_export", f"{run_id} {target}")
    nb = nbformat.read(target, as_version=4)
    nbformat.validate(nb)
    body, _ = HTMLExporter().from_notebook_node(nb)
    parser = Live()
    parser.feed(body)
    scripts = _script_texts(body)
    assert not any(XSS in text for text in scripts), [text[:200] for text in scripts if XSS in text]
    assert [part for part in parser.found if not part.startswith("<") or part == "<iframe>"] == []
    assert "<h1>Report</h1>" in body and "<strong>bold</strong>" in body
    setup = next(cell.source for cell in nb.cells if "deepagent-setup" in cell.metadata.get("tags", []))
    assert f"WORKSPACE = _Path({str(tmp_path.resolve())!r})" in setup


def _script_texts(markup: str) -> list[str]:
    texts: list[str] = []

    class Scripts(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "script"

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                texts.append(data)

    Scripts().feed(markup)
    return texts


@pytest.mark.parametrize("text", [RESULT, HTML_TEXT, STATUS, "<scr<script>ipt>alert(1)</script>",
                                  "<a href='&#106;avascript:alert(1)'>x</a>", "<IMG SRC=JaVaScRiPt:alert(1)>",
                                  "<a href=\"java\tscript:alert(1)\">t</a>", "[x](  javascript:alert(1))",
                                  "<details open ontoggle=alert(1)>", "<p style=\"x:expression(alert(1))\">p</p>"])
def test_sanitised_markdown_keeps_nothing_live(text):
    from deepagent_magics.safe_text import markdown_html

    shown = markdown_html(text)
    assert live_parts(shown) == []
    assert [name for attrs in _start_tags(shown) for name, _ in attrs if name not in ("href", "src", "alt", "title", "open")] \
        == [], shown
