"""Strict JSON (RFC 8259, which has no NaN or Infinity): every record, ``--json`` output and
live-view snapshot feltlab writes is read by JavaScript's ``JSON.parse`` and jq, so a figure
that could not be computed (a power not estimated, a statistic that could not run, a capture's
NaN timestamp) is written as ``null``."""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def json_safe(obj: Any) -> Any:
    """``obj`` as plain JSON data: mappings as dicts with string keys, lists, tuples, deques
    and numpy arrays as lists, numpy scalars as Python ones, paths as strings, and every
    non-finite float as None.  Other values are returned as they are."""
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | deque):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of ``obj`` (:func:`json_safe` of it).  Raises TypeError for a value
    JSON cannot hold (naming its type)."""
    return json.dumps(json_safe(obj), indent=indent, allow_nan=False, default=_refuse)


def _refuse(o: Any) -> Any:
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


__all__ = ["dumps", "json_safe"]
