"""TileLang's `tilelang.engine` surface that programs import: the callback
hooks (`tilejit.engine.callback`)."""

from . import callback

__all__ = ["callback"]
