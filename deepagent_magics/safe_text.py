r"""Model-written text made safe to show: escaped as HTML, Markdown rendered and sanitised, or plain text.

Everything a run holds may have been written by a model or a sub-agent, and a record read back
may have been planted (records/store.py). Where such text meets HTML it is escaped with quotes
(`escape`: an attribute value cannot be left), because ipywidgets' ``HTML`` sets ``innerHTML``.
Where it is Markdown (a run's result), it is rendered with mistune and cleaned with bleach, both
already installed with Jupyter (nbconvert uses them): a small allowlist of tags, no ``script`` or
``style``, no event handlers or inline styles, links only to http(s), mailto, anchors and
relative paths, and images only from relative paths (a model's image URL would otherwise send a
request, with whatever it put in it, the moment the result is shown). Which URL is relative is
decided as a browser decides it (`safe_url`): the value, its character references decoded, is
parsed with Ada, a WHATWG URL parser, against a fixed base that is no real place (`BASE`); a
relative URL survives only if it lands under that base, and is then written out in the form that
parse gave, behind ``./`` (``/\evil.example/p.png``, `` //evil``, ``\\evil`` or ``https:evil`` are
other hosts to a browser, whatever a simpler check thinks). The result goes out as
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

import ada_url

TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
        "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
        "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
LINK_SCHEMES = {"http", "https", "mailto"}
BASE = "https://deepagent.invalid/result/"  # relative URLs must stay under it (.invalid is never a real host)
URL_ATTRIBUTES = {("a", "href"), ("img", "src")}
_REFERENCE = re.compile(r"&(?=(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);)")  # what bleach keeps as one
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape(text: Any) -> str:
    """``text`` as HTML text or an attribute value (quotes escaped too)."""
    return html.escape(str(text), quote=True)


def safe_url(value: str, *, image: bool = False) -> str | None:
    """The URL to write for a link's ``href`` (or, ``image``, an image's ``src``) whose value, character
    references decoded, is ``value``; None when it must go.

    A URL that parses on its own is absolute: a link keeps it (as parsed) when its scheme is http(s) or
    mailto, an image never. Any other is relative: parsed against `BASE` as a browser would, it must land
    under it; it is then written as that parse serialised it, behind ``./`` (or as a bare ``#fragment``),
    so that no browser, on any page, reads a scheme or a host into it."""
    try:
        if ada_url.check_url(value):
            absolute = ada_url.URL(value)
            if image or absolute.protocol.rstrip(":") not in LINK_SCHEMES:
                return None
            return _REFERENCE.sub("%26", absolute.href)
        resolved = ada_url.URL(value, BASE).href
    except ValueError:
        return None
    if not resolved.startswith(BASE):
        return None
    rest = _REFERENCE.sub("%26", resolved[len(BASE):])  # bleach writes "&lt;" as it is: a browser would decode it
    return rest if rest.startswith("#") else "./" + rest


def _attribute_url(tag: str, value: str) -> str | None:
    """`safe_url` of an attribute value as bleach hands it over (its character references not decoded)."""
    return safe_url(html.unescape(value), image=tag == "img")


def _allowed(tag: str, name: str, value: str) -> bool:
    """bleach's attribute filter: which attributes survive, by tag."""
    if (tag, name) in URL_ATTRIBUTES:
        return _attribute_url(tag, value) is not None
    value = value.strip()
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
    from bleach.html5lib_shim import Filter

    class WrittenAsParsed(Filter):
        """Each kept ``href`` and ``src`` replaced by the URL `safe_url` parsed it as."""

        def __iter__(self) -> Any:
            for token in super().__iter__():
                if token["type"] in ("StartTag", "EmptyTag"):
                    for (namespace, name), value in list(token["data"].items()):
                        if namespace is None and (token["name"], name) in URL_ATTRIBUTES:
                            url = _attribute_url(token["name"], value)
                            if url is None:
                                del token["data"][(namespace, name)]
                            else:
                                token["data"][(namespace, name)] = url
                yield token

    markdown = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    cleaner = bleach.sanitizer.Cleaner(tags=TAGS, attributes=_allowed, protocols=LINK_SCHEMES, strip=True,
                                       strip_comments=True, filters=[WrittenAsParsed])
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
