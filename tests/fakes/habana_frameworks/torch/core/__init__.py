"""`mark_step` is the lazy-mode graph boundary; on the fake it does nothing."""


def mark_step() -> None:
    return None
