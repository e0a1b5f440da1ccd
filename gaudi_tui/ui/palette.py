"""Rich styles from the current Textual theme, for text drawn outside CSS (Rich `Text`, plots).

Every colour comes from the theme's `$text-warning`, `$text-error`, `$text-success` (the variants
Textual makes readable on the theme's background, light or dark) and `$accent`/`$secondary`.
Errors are also bold, so they stand out with NO_COLOR and in 16-colour terminals, where Textual
drops or maps the colours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.color import Color


@dataclass(frozen=True)
class Palette:
    warning: str
    error: str
    success: str
    accent: str
    secondary: str
    muted: str

    def rgb(self, style: str) -> tuple[int, int, int]:
        """The colour of one of these styles as (r, g, b), for plotext."""
        return Color.parse(style.split()[-1]).rgb


_LAST: list[tuple[dict[str, str], Palette]] = []
"""The last theme's variables (the dict itself) and their palette: a screen asks on every refresh."""


def palette(app: App[Any]) -> Palette:
    """Styles for the app's current theme (`theme_variables` is a new dict on each theme change, so
    the same dict means the same palette)."""
    variables = app.theme_variables or app.get_css_variables()
    if _LAST and _LAST[0][0] is variables:
        return _LAST[0][1]
    found = _palette(variables)
    _LAST[:] = [(variables, found)]
    return found


def _palette(variables: dict[str, str]) -> Palette:
    background = _parse(variables.get("background"), Color(0, 0, 0))

    def colour(name: str, fallback: str) -> str:
        found = _parse(variables.get(name), Color.parse(fallback))
        # a translucent colour (e.g. $foreground-muted) as it looks on the background
        return background.blend(found.with_alpha(1.0), found.a).hex6

    return Palette(
        warning=colour("text-warning", "yellow"),
        error="bold " + colour("text-error", "red"),
        success=colour("text-success", "green"),
        accent=colour("text-accent", "cyan"),
        secondary=colour("text-secondary", "magenta"),
        muted=colour("foreground-muted", "grey"),
    )


def _parse(value: str | None, fallback: Color) -> Color:
    try:
        return Color.parse(value) if value else fallback
    except Exception:  # a theme variable that is not a plain colour ("auto 60%")
        return fallback
