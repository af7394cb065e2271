"""The type of what the harness writes: one JSON record per command (its fields are
contract/*.schema.json's, generated from src/shared/contract) and the dicts inside one."""

from typing import Any

Record = dict[str, Any]
Result = dict[str, Any]  # compare()'s verdict on one output, with where it was found
