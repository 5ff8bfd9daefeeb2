"""Student text made safe to store and to show: encodable, bounded, and escaped for Markdown and HTML.

Everything a notebook prints, names or raises is untrusted text. Before it reaches nbgrader, the
feedback HTML, the formgrader or a grading report it is made encodable (a lone surrogate such as
"\\ud800" becomes U+FFFD, control characters are dropped) and, where Markdown renders it, escaped so
that no tag, link, code span or table cell boundary of the student's survives.
"""
import html
import re

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")  # keeps \t \n \r and ESC (ANSI colours)
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]!|~$])")  # what starts a span or a cell mid-line; < > & are HTML


def encodable(text):
    """text with lone surrogates replaced by U+FFFD and control characters dropped (always valid UTF-8)."""
    if not isinstance(text, str):
        text = str(text)
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return CONTROL.sub("", text)


def clean_tree(value):
    """A JSON-like value (dicts, lists, strings) with every string and key made encodable."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable(key): clean_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_tree(item) for item in value]
    return value


def shorten(text, limit):
    """text cut to limit characters, saying how much was cut."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return encodable(text)
    return encodable(text[:limit]) + f" … ({len(text) - limit} characters cut)"


def markdown(text, limit=500):
    """Plain text shown literally by any Markdown renderer when put after a list bullet or in a table cell.

    One line (so no heading, list or fence can start), Markdown punctuation backslash-escaped (no code
    span, emphasis, link, image or cell boundary), then HTML-escaped (no tag, no entity of the student's).
    """
    text = " ".join(shorten(text, limit).split())
    return html.escape(MARKDOWN_SPECIAL.sub(r"\\\1", text), quote=False)
