"""The console every terminal output is printed through: rich's, with input's control
characters shown as escapes (`ftdc.untrusted.printable`) rather than acted on.

rich drops only BEL, backspace, VT, FF and CR; ESC, the rest of C0, C1 and the
bidirectional controls reach the terminal as they are. Strings are made printable
before rich measures them (so tables lay them out at their shown width); every
segment is checked again as it is written, so a `Text` built anywhere, a rule's title
or a JSON view is covered too. rich's own control segments (cursor moves of a progress
bar) pass: they are the console's, not the input's. Emoji codes stay text (`:fire:` in a
namespace is not a picture).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from .untrusted import UNSAFE, printable


class Terminal(Console):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and UNSAFE.search(segment.text):
                segment = Segment(printable(segment.text), segment.style)
            yield segment
