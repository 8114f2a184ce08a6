"""The profile writer: its TOML reads back as written, whatever the keys and strings."""

from __future__ import annotations

import tomllib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from protobench.profiles import writer

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_SCALAR = st.one_of(
    _TEXT,
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@given(
    st.dictionaries(
        _TEXT,
        st.one_of(
            _SCALAR,
            st.lists(_SCALAR, max_size=4),
            st.dictionaries(_TEXT, _SCALAR, max_size=4),
            st.lists(st.dictionaries(_TEXT, _SCALAR, max_size=3), min_size=1, max_size=3),
        ),
        max_size=6,
    )
)
def test_the_writers_toml_reads_back_as_written(data: dict[str, Any]) -> None:
    assert tomllib.loads(writer.dumps(data)) == data
