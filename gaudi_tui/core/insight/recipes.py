"""The recipes compiled most, from GC-details `recipe` lists, counted as they grow.

Intel's saver repeats the whole list (`[name, duration]` for every compile so far) in every
`graph_compilation` dump, so each list is the previous one plus the new compiles: only the
entries past the length seen last are counted (a shorter list, from another process, starts
over). The tally keeps one entry per distinct recipe name, at most `MAX_NAMES` (names beyond are
not tallied), and the top `TOP_RECIPES`; never the list itself.
"""

from __future__ import annotations

import heapq

TOP_RECIPES = 10
MAX_NAMES = 20_000


def _rank(entry: tuple[str, int, float]) -> tuple[int, float, str]:
    name, count, seconds = entry
    return (-count, -seconds, name)


class RecipeTally:
    def __init__(self, n: int = TOP_RECIPES) -> None:
        self.n = n
        self.counts: dict[str, list[float]] = {}
        self.seen = 0
        self.top: list[tuple[str, int, float]] = []
        """(recipe, compiles, total time) most compiled first, then longest."""

    def update(self, recipes: list[object]) -> None:
        if len(recipes) < self.seen:
            self.counts, self.seen, self.top = {}, 0, []
        changed: set[str] = set()
        for item in recipes[self.seen :]:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                continue
            name = str(item[0])
            entry = self.counts.get(name)
            if entry is None:
                if len(self.counts) >= MAX_NAMES:
                    continue
                entry = self.counts[name] = [0, 0.0]
            entry[0] += 1
            entry[1] += float(item[1]) if isinstance(item[1], (int, float)) else 0.0
            changed.add(name)
        self.seen = len(recipes)
        # counts only grow: a name neither in the top nor changed cannot enter it
        candidates = {name for name, _, _ in self.top} | changed
        entries = ((name, int(self.counts[name][0]), self.counts[name][1]) for name in candidates)
        self.top = heapq.nsmallest(self.n, entries, key=_rank)
