"""The general reader's repairs touch only what they promise: lone surrogates and out-of-range
numbers; every other escape in a string decodes as the standard library decodes it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from profview.parsers import json_repair

#: Text with no lone surrogate: what ``json.dumps`` writes as escapes (``\\u00e9``, pairs for
#: astral characters, ``\\n``) must come back unchanged from a repair.
WHOLE_TEXT = st.text(st.characters(exclude_categories=("Cs",)))


@given(WHOLE_TEXT, WHOLE_TEXT)
def test_a_repair_keeps_every_escape_that_is_not_a_lone_surrogate(first: str, second: str) -> None:
    """A string holding a surrogate pair (so the repair's escape pass runs on it) and any other
    escapes decodes, once repaired, to the same text as the standard library reads."""
    text = first + "\U0001f600" + second
    document = json.dumps({"name": text}).encode()  # ensure_ascii: every non-ASCII character escaped
    repaired, unreadable = json_repair.repair(document)
    assert unreadable == 0
    assert json.loads(repaired) == {"name": text}


def test_a_lone_surrogate_becomes_the_replacement_character_and_its_neighbours_stay() -> None:
    """The one rewrite of a string: a lone high or low surrogate is U+FFFD; ``\\u00e9`` beside it is é."""
    document = b'["f\\u00e9\\ud800x", "\\udc00\\u00e9", "\\ud83d\\ude00\\u00e9"]'
    repaired, _ = json_repair.repair(document)
    assert json.loads(repaired) == ["f\u00e9\ufffdx", "\ufffd\u00e9", "\U0001f600\u00e9"]
