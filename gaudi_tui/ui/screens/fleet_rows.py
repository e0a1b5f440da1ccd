"""How the Fleet screen draws one host row: each card's three characters under the chosen metric and
its colour, the row's cells, and the theme's styles they use."""

from __future__ import annotations

from collections.abc import Mapping

from rich.style import Style
from rich.text import Text
from textual.color import Color

from gaudi_tui.core.fleet.model import Card
from gaudi_tui.ui.widgets.host_grid import Row


def card_text(card: Card, metric: str) -> str:
    """Three characters for one card under the chosen metric."""
    if metric == "temperature":
        value = card.temperature_c
    else:
        ratio = card.ratio(metric)
        value = None if ratio is None else ratio * 100
    return "  ·" if value is None else f"{min(value, 999):3.0f}"


def level(card: Card, metric: str) -> str:
    """Theme variable naming the card's colour: flagged → error; else by its share of the scale."""
    if card.flags:
        return "error"
    ratio = card.ratio(metric)
    if ratio is None:
        return "text-muted"
    return "success" if ratio < 0.5 else "warning" if ratio < 0.9 else "error"


def theme_styles(colours: Mapping[str, str]) -> dict[str, Style]:
    """Rich styles from the theme's $success/$warning/$error (muted = dim)."""
    styles: dict[str, Style] = {
        name: Style(color=Color.parse(colours[name]).rich_color, bold=name == "error")
        for name in ("success", "warning", "error")
        if name in colours
    }
    return {"text-muted": Style(dim=True), **styles}


def cards_cell(row: Row, styles: Mapping[str, Style], metric: str) -> Text:
    host = row.host
    if host.state == "down":
        return Text("target down", style=styles["error"])
    text = Text()
    if row.cards is None:  # not asked for yet: one muted dot per card
        text.append("  · " * host.cards, style=styles["text-muted"])
    else:
        for card in row.cards.cards:
            text.append(card_text(card, metric), style=styles[level(card, metric)])
            text.append(" ")
    missing = host.usual_cards - host.cards
    if missing > 0:
        text.append("  ?" * missing, style=styles["error"])
    return text


def cells(row: Row, styles: Mapping[str, Style], metric: str, size: int) -> tuple[Text, ...]:
    """One host row under `metric`, with whether a job of `size` cards fits."""
    host = row.host
    fits = host.fits(size)
    return (
        Text(host.name),
        Text(host.state, style=styles["success"] if host.state == "up" else styles["error"]),
        cards_cell(row, styles, metric),
        Text(str(len(host.free_ids))),
        Text(f"{size}:{'✓' if fits else '—'}", style=styles["success"] if fits else styles["text-muted"]),
        Text(", ".join(host.flags) or "ok", style=styles["error"] if host.flags else styles["text-muted"]),
    )
