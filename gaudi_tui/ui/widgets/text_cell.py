"""A one-line rich Text drawn as a table cell's line of Segments, without rich's layout passes.

DataTable draws each cell as `console.render_lines(Styled(Padding(text, (0, padding)), pre, post))`:
a Padding, a Text wrapped (or not) and justified, lines split, cropped and padded: a page of the
Slurm queue drawn from empty caches took 76 µs a cell here, 34 drawn this way (the rows' own drawing
in both). For a Text of one line that is not wrapped (a row of height 1), the same line is: the text
cropped to the cell's width less its padding (`Text.truncate`, as rich crops it), its segments cut
at its spans' edges, padded to that width, the padding either side, every segment's style
`pre + own + post`. `line` builds that directly, or says None for a Text it does not cover (newlines, tabs,
justified, wrapped, ellipsis or no overflow, an odd `end`, spans past its end, a null `pre`): the
caller draws those the rich way. tests/slurm/test_window_table_cells.py holds it equal, segment by
segment, to DataTable's own drawing.
"""

from __future__ import annotations

from operator import itemgetter

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text

NULL = Style.null()
"""The style rich gives a Padding's spaces ("none")."""


def line(
    console: Console, text: Text, width: int, padding: int, pre: Style, post: Style
) -> list[Segment] | None:
    """The cell's line (`width` cells, `padding` of them either side) as DataTable draws it with
    `pre` under the text's styles and `post` over them; None where rich's way is needed. A table's
    `pre` is never null (it holds the cell's row and column as meta): a null one is left to rich,
    which keeps None and null styles apart under it."""
    inner = width - 2 * padding
    plain = text.plain
    if (
        inner < 1
        or not pre
        or "\n" in plain
        or "\t" in plain
        or text.justify not in (None, "default")
        or text.overflow in ("ellipsis", "ignore")
        or text.no_wrap is False
        or text.end not in ("", "\n")
        or any(not 0 <= span.start <= span.end <= len(plain) for span in text.spans)
    ):
        return None
    if text.cell_len > inner:  # cropped as Text.wrap crops a line that is not wrapped
        text = text.copy()
        text.truncate(inner, overflow="crop")
    spans = ([Span(0, len(text), text.style)] if text.style else []) + text.spans  # as Text.join makes them
    own = _segments(console, text.plain, spans) if spans else [Segment(text.plain)]
    length = sum(segment.cell_length for segment in own)
    if length > inner:
        return None
    if not own:  # a styled empty text draws nothing: its line is the padding rich adds to fill the height
        cells = [Segment(" " * inner, NULL)]
    elif length < inner:
        cells = [*own, Segment(" " * (inner - length), NULL)]
    else:
        cells = own
    if padding:
        cells = [Segment(" " * padding, NULL), *cells, Segment(" " * padding, NULL)]
    bare = _styled(None, pre, post)  # the padding's and the unstyled text's (pre + None is pre + null)
    return [Segment(part, _styled(style, pre, post) if style else bare) for part, style, _ in cells]


def _styled(style: Style | None, pre: Style, post: Style) -> Style:
    """A segment's style after Styled: `pre` (not null) under it, `post` over it
    (Segment.apply_style); a null style is added as None is."""
    styled = pre + style
    return styled + post if post else styled


def _segments(console: Console, plain: str, spans: list[Span]) -> list[Segment]:
    """The text cut at its spans' edges, each part styled by the spans over it in their order
    (Text.render, for a text whose own style is null: its style is the first span)."""
    styles = [NULL, *(console.get_style(span.style, default=NULL) for span in spans)]
    edges = sorted(
        [
            (0, False, 0),
            *((span.start, False, i) for i, span in enumerate(spans, 1)),
            *((span.end, True, i) for i, span in enumerate(spans, 1)),
            (len(plain), True, 0),
        ],
        key=itemgetter(0, 1),
    )
    over: list[int] = []
    out: list[Segment] = []
    for (offset, leaving, index), (following, _, _) in zip(edges, edges[1:], strict=False):
        if leaving:
            over.remove(index)
        else:
            over.append(index)
        if following > offset:
            out.append(Segment(plain[offset:following], Style.combine(styles[i] for i in sorted(over))))
    return out
