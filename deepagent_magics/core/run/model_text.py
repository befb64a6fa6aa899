"""Model-written text made safe to show: escaped as HTML, Markdown rendered and sanitised, or plain text.

Everything a run holds may have been written by a model or a sub-agent, and a record read back
may have been planted (records/store.py). Where such text meets HTML it is escaped with quotes
(`escape`: an attribute value cannot be left), because ipywidgets' ``HTML`` sets ``innerHTML``.
Where it is Markdown (a run's result), it is rendered with mistune and cleaned with bleach, both
already installed with Jupyter (nbconvert uses them): a small allowlist of tags, no ``script`` or
``style``, no event handlers or inline styles, links only to http(s), mailto, anchors and
relative paths, and images only from relative paths (a model's image URL would otherwise send a
request, with whatever it put in it, the moment the result is shown). The result goes out as
``text/html``, never ``text/markdown``: JupyterLab renders Markdown output of the current session
as trusted, raw HTML included. Where text goes to a terminal or a log (`plain`), control
characters are shown as escapes, so a model cannot move the cursor, retitle the window or
rewrite a line that came before.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any
from urllib.parse import urlsplit

TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
        "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
        "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
LINK_SCHEMES = {"http", "https", "mailto"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape(text: Any) -> str:
    """``text`` as HTML text or an attribute value (quotes escaped too)."""
    return html.escape(str(text), quote=True)


def _relative(url: str) -> bool:
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc and not url.startswith(("//", "\\"))


def _allowed(tag: str, name: str, value: str) -> bool:
    """bleach's attribute filter: which attributes survive, by tag."""
    value = value.strip()
    if tag == "a" and name == "href":
        return _relative(value) or urlsplit(value).scheme.lower() in LINK_SCHEMES
    if tag == "img" and name == "src":
        return _relative(value)
    if name in ("title", "alt") and tag in ("a", "img", "abbr"):
        return True
    if name == "align" and tag in ("td", "th"):
        return value in ("left", "right", "center")
    if name == "start" and tag == "ol":
        return value.isdigit()
    if name == "class" and tag == "code":
        return re.fullmatch(r"language-[\w+-]{1,40}", value) is not None
    if name == "open" and tag == "details":
        return True
    return False


@functools.lru_cache(maxsize=1)
def _renderer() -> Any:
    import bleach
    import mistune

    markdown = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    cleaner = bleach.sanitizer.Cleaner(tags=TAGS, attributes=_allowed, protocols=LINK_SCHEMES, strip=True,
                                       strip_comments=True)
    return markdown, cleaner


def clean_html(fragment: str) -> str:
    """An HTML fragment with everything but the allowlist taken out."""
    return _renderer()[1].clean(fragment)


def markdown_html(text: Any) -> str:
    """Markdown a model wrote, as sanitised HTML (raw HTML in it kept only where the allowlist allows)."""
    markdown, _ = _renderer()
    return clean_html(markdown(str(text)))  # a <script>'s tags go, its text stays, escaped


def markdown_bundle(text: Any) -> dict[str, str]:
    """A display bundle for a model's Markdown: sanitised ``text/html`` and the plain text."""
    return {"text/html": f'<div class="deepagent-result">{markdown_html(text)}</div>', "text/plain": plain(text)}


class SafeMarkdown:
    """What ``display()`` shows for a model's Markdown (in place of IPython's trusted ``Markdown``)."""

    def __init__(self, text: Any):
        self.text = str(text)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return markdown_bundle(self.text)


def plain(text: Any) -> str:
    """``text`` for a terminal or a log: control characters (escape sequences, carriage returns,
    bidirectional overrides) shown as ``\\x1b``-style escapes; newlines and tabs kept."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))
