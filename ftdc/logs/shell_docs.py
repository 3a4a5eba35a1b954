"""Read the mongo-shell-syntax documents of legacy text logs (≤ 4.2).

Text logs print documents as the shell does: unquoted keys, `ObjectId(...)`,
`new Date(...)`, `/regex/`, `Timestamp(1, 2)`. They are not JSON (docs/log-format.md
§6), so this reads just their structure: keys and nesting, with every scalar
kept as its literal text. That is all a query shape needs.
"""

import re

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<punct>[{}\[\]:,])
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<regex>/(?:[^/\\\n]|\\.)+/[a-z]*)
    | (?P<word>(?:new\s+)?[^\s{}\[\]:,()"']+(?:\((?:[^()"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')*\))?)
    )""",
    re.VERBOSE,
)


# Deeper documents have no shape: the native shaper reads JSON with a limit of
# 128 levels (serde_json's), and the recursion here stays far from Python's.
MAX_DEPTH = 100


class ShellSyntaxError(ValueError):
    pass


class NestedTooDeep(ValueError):
    """A document nested deeper than MAX_DEPTH. Unlike a syntax error, which is
    the shell's own output format this reader does not know, it is reported."""


def balanced_end(text: str, start: int) -> int:
    """Index just past the brace/bracket group opening at `start`, skipping strings."""
    depth, i, quote = 0, start, None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ShellSyntaxError("unbalanced document")


def parse(text: str):
    """Parse one shell document into dicts, lists and literal strings."""
    tokens = [(m.lastgroup, m.group(m.lastgroup)) for m in _TOKEN.finditer(text) if m.lastgroup]
    value, pos = _value(tokens, 0, 0)
    return value


def _value(tokens, pos, depth):
    if pos >= len(tokens):
        raise ShellSyntaxError("document ends early")
    kind, text = tokens[pos]
    if kind == "punct" and text in ("{", "["):
        if depth == MAX_DEPTH:
            raise NestedTooDeep(f"document nested deeper than {MAX_DEPTH} levels")
        return (_object if text == "{" else _array)(tokens, pos + 1, depth + 1)
    if kind == "punct":
        raise ShellSyntaxError(f"unexpected {text!r}")
    if kind == "string":
        return text[1:-1], pos + 1
    return text, pos + 1


def _object(tokens, pos, depth):
    out = {}
    while pos < len(tokens):
        kind, text = tokens[pos]
        if kind == "punct" and text == "}":
            return out, pos + 1
        if kind == "punct" and text == ",":
            pos += 1
            continue
        key = text[1:-1] if kind == "string" else text
        if pos + 1 >= len(tokens) or tokens[pos + 1] != ("punct", ":"):
            raise ShellSyntaxError("key without value")
        out[key], pos = _value(tokens, pos + 2, depth)
    raise ShellSyntaxError("object not closed")


def _array(tokens, pos, depth):
    out = []
    while pos < len(tokens):
        kind, text = tokens[pos]
        if kind == "punct" and text == "]":
            return out, pos + 1
        if kind == "punct" and text == ",":
            pos += 1
            continue
        item, pos = _value(tokens, pos, depth)
        out.append(item)
    raise ShellSyntaxError("array not closed")


def document_after(text: str, label: str):
    """Parse the document that follows `label` (e.g. "query: "), or None.
    Raises NestedTooDeep."""
    at = text.find(label)
    if at < 0:
        return None
    start = text.find("{", at + len(label))
    # The label may name the command before its document: "command: find { ... }".
    if start < 0 or text[at + len(label) : start].strip(" ").count(" ") > 0:
        return None
    try:
        return parse(text[start : balanced_end(text, start)])
    except ShellSyntaxError:
        return None
