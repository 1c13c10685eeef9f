"""``--black``: format a rewritten file with black (an optional dependency)."""

from __future__ import annotations

from ..rewriting.engine import RewriteError


def require_black() -> str | None:
    """None when black can be imported, else what to tell the user."""
    try:
        import black  # noqa: F401
    except ImportError:
        return "--black needs black, which is not installed: pip install 'eqrewrite[black]'"
    return None


def format_with_black(text: str) -> str:
    """``text`` as black formats it; a RewriteError when black refuses it."""
    import black
    from black.parsing import InvalidInput

    try:
        return black.format_str(text, mode=black.Mode())
    except InvalidInput as error:
        raise RewriteError(f"black could not format the rewritten file: {error}") from None
