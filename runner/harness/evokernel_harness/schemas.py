"""The contract's generated JSON Schemas (contract/, written by `npm run contract` from
src/shared/contract): facts both languages share (dtypes, hack classes), read from there
rather than written again in Python."""

import functools
import json
import os
from typing import Any

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract")


@functools.lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    with open(os.path.join(FOLDER, name), encoding="utf-8") as f:
        return json.load(f)


def enum(name: str) -> list[str]:
    """A string enum's values, in the contract's order."""
    return list(schema(name)["enum"])


def consts(name: str) -> dict[str, int]:
    """An object schema whose every property is a constant: property → constant."""
    return {key: int(entry["const"]) for key, entry in schema(name)["properties"].items()}
