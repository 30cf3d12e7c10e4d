"""Jinja2 rendering. HTML: autoescaped, images and GIFs embedded as data URIs,
CSS and the sorting script inline, so the file stands alone. Markdown: every
value is HTML-escaped and Markdown-escaped by the environment's `finalize`
unless it is `Markup` (fenced code blocks, the author's notes)."""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import mimetypes
import re
from pathlib import Path

import jinja2
from markupsafe import Markup

from . import fmt, fonts


def _datauri(assets: Path):
    cache = {}

    def f(name):
        if not name:
            return ""
        if name not in cache:
            p = Path(assets) / name
            mime = mimetypes.guess_type(p.name)[0] or "application/octet-stream"
            cache[name] = f"data:{mime};base64," + base64.b64encode(p.read_bytes()).decode("ascii")
        return cache[name]
    return f


def _mdlink(text, url):
    url = str(url or "").replace(" ", "%20").replace(")", "%29").replace("(", "%28").replace("<", "%3C").replace(">", "%3E")
    return Markup(f"[{fmt.md(text)}]({url})")


def _mdimg(alt, name):
    return Markup(f"![{fmt.md(alt)}](assets/{str(name).replace(' ', '%20')})")


def _env(templates: Path, autoescape: bool, **kw) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, **kw)
    env.filters["fence"] = fmt.fence
    env.filters["anchor"] = fmt.anchor
    return env


# Click a header to sort by that column (numbers by their data-v value, n/a last).
SORT_JS = """
(function () {
  function key(td) {
    if (!td) return [2, ""];
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(Number(v))) return [0, Number(v)];
    var t = (v !== null ? v : td.textContent).trim();
    return t === "" || t === "n/a" || t === "None" ? [2, ""] : [1, t.toLowerCase()];
  }
  function cmp(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        heads.forEach(function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var a = key(r1.cells[col]), b = key(r2.cells[col]);
          if (a[0] === 2 || b[0] === 2) return a[0] - b[0];
          return asc ? cmp(a, b) : cmp(b, a);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
"""


def _html_broken(text) -> Markup:
    return Markup('<div class="flagbox broken" role="alert">⚠ {}</div>').format(text)


def _md_broken(text) -> Markup:
    return Markup(f"\n> ⚠️ **{fmt.md(text)}**\n\n")


def _guard(problems, broken):
    """`{{ guard(what, macro, *args) }}` in a template: the macro's output, or a
    visible "could not draw <what>: <reason>" when it raises."""
    def guard(what, fn, *args, **kw):
        try:
            problems.inject(what)
            return Markup(fn(*args, **kw))
        except Exception as e:  # noqa: BLE001 - one part fails, the report goes on
            return broken(problems.add(what, e)["text"])
    return guard


@jinja2.pass_context
def _datauri_filter(context, name):
    return context["datauri_of"](name)


@functools.lru_cache(maxsize=8)
def _html_env(templates: str) -> jinja2.Environment:
    env = _env(Path(templates), True)
    env.filters["datauri"] = _datauri_filter
    return env


@functools.lru_cache(maxsize=8)
def _md_env(templates: str) -> jinja2.Environment:
    env = _env(Path(templates), False, finalize=fmt.md_finalize)
    env.filters["mdlink"] = _mdlink
    env.filters["mdimg"] = _mdimg
    env.filters["raw"] = lambda s: Markup(str(s))
    return env


def _plain(what, fn, *args, **kw):
    return Markup(fn(*args, **kw))


def render_html(ctx: dict, templates: Path, assets: Path, problems=None) -> str:
    """The page; when it holds CJK characters, rendered a second time with a
    font cut to exactly those characters (fonts.py), since only the rendered
    page knows them."""
    digest = base64.b64encode(hashlib.sha256(SORT_JS.encode("utf-8")).digest()).decode("ascii")
    template = _html_env(str(templates)).get_template("report.html.j2")
    kw = dict(ctx, sort_js=Markup(SORT_JS), csp_script=Markup(f"'sha256-{digest}'"), datauri_of=_datauri(assets),
              guard=_guard(problems, _html_broken) if problems is not None else _plain, broken=_html_broken)
    page = template.render(**kw, page_font=None).lstrip()
    font = _page_font(page, ctx.get("S"), problems)
    return template.render(**kw, page_font=font).lstrip() if font else page


def _page_font(page: str, S, problems):
    """The page's own CJK font, or None. One that cannot be made costs only the
    font: the page is written, and its problems list says Chinese may show as boxes."""
    if problems is None:
        try:
            return fonts.page_font(page, S)
        except fonts.NoPageFont:
            return None
    return problems.run(fonts.words(S, "what"), fonts.page_font, page, S, default=None)


def render_markdown(ctx: dict, templates: Path, problems=None) -> str:
    text = _md_env(str(templates)).get_template("report.md.j2").render(
        **ctx, guard=_guard(problems, _md_broken) if problems is not None else _plain, broken=_md_broken)
    return re.sub(r"\n{3,}", "\n\n", text).lstrip()


def render_all(ctx, templates: Path, assets: Path, problems, S, request) -> tuple:
    """(Markdown, HTML). A part that fails during rendering is recorded; then
    both are rendered again so that each lists every failure. When a whole
    template fails, a plain page says why and lists what failed."""
    md = html = None
    for _ in range(3):
        seen = len(problems.items)
        md = _render_or_none(render_markdown, problems, S("what_format", fmt="Markdown"), ctx, templates, problems)
        html = _render_or_none(render_html, problems, S("what_format", fmt="HTML"), ctx, templates, assets, problems)
        if len(problems.items) == seen:
            break
    if md is None:
        md = fallback_markdown(request["title"], problems, S)
    if html is None:
        html = fallback_html(request["title"], problems, S, request["lang"])
    return md, html


def _render_or_none(fn, problems, what, ctx, *args):
    if ctx is None:
        return None
    try:
        return fn(ctx, *args)
    except Exception as e:  # noqa: BLE001
        problems.add(what, e)
        return None


def fallback_markdown(title, problems, S) -> str:
    lines = [f"# {fmt.md(title)}", "", f"> ⚠️ **{fmt.md(S('fallback_intro'))}**", ""]
    lines += [f"- {fmt.md(t)}" for t in problems.texts()]
    return "\n".join(lines) + "\n"


def fallback_html(title, problems, S, lang) -> str:
    items = "".join(f"<li>{html.escape(t)}</li>" for t in problems.texts())
    return (f'<!DOCTYPE html>\n<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
            f"<title>{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
            f'<section id="errors"><p><strong>{html.escape(S("fallback_intro"))}</strong></p><ul>{items}</ul></section>'
            "</body></html>\n")


# ------------------------------------------------------------------ the author's notes
_TAG = re.compile(r"<(?=[/!?A-Za-z])(?!(?:https?|ftp|mailto):)")
_FENCE = re.compile(r"(?ms)^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


_UNSAFE_URL = re.compile(r"(?im)(\]\(\s*<?|^[ \t]*\[[^\]\n]*\]:[ \t]*<?)\s*(?:javascript|vbscript|file|data(?!:image/)):")


def _escape_tags(text: str) -> str:
    """`<tag`, `</tag`, `<!--` as text; links with a scheme that runs something
    point nowhere; code spans and autolinks (<https://...>) kept."""
    out, pos = [], 0

    def clean(t):
        return _UNSAFE_URL.sub(lambda m: m.group(1) + "#unsafe-link-removed:", _TAG.sub("&lt;", t))
    for m in _CODE_SPAN.finditer(text):
        out.append(clean(text[pos:m.start()]) + m.group(0))
        pos = m.end()
    return "".join(out) + clean(text[pos:])


def notes_markdown(text: str) -> Markup:
    """The author's Markdown for the .md report: its Markdown as it is, raw HTML
    shown as text (as in the HTML report), fenced code blocks untouched."""
    text, out, pos = text or "", [], 0
    for m in _FENCE.finditer(text):
        out.append(_escape_tags(text[pos:m.start()]) + m.group(0))
        pos = m.end()
    return Markup("".join(out) + _escape_tags(text[pos:]))


def notes_html(text: str) -> Markup:
    """The author's Markdown as HTML: raw HTML in it is escaped, links with
    unsafe schemes dropped, and images that point outside the file become links
    (the report makes no request)."""
    try:
        import mistune
    except ImportError:  # plain text, escaped
        return Markup("<pre class='notes'>" + html.escape(text) + "</pre>")

    class Renderer(mistune.HTMLRenderer):
        def image(self, text, url, title=None):  # noqa: D401
            if str(url).startswith("data:image/"):
                return super().image(text, url, title)
            return f'<a href="{self.safe_url(url)}">{html.escape(str(text) or str(url))}</a>'

    md = mistune.create_markdown(escape=True, renderer=Renderer(escape=True),
                                 plugins=["table", "strikethrough", "url"])
    return Markup(md(text))
