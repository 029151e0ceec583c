"""The plain-text table formatter behind the human output."""

from __future__ import annotations

from nenjim.cli.table import format_table


def test_columns_are_left_aligned_two_spaces_apart():
    assert format_table([["a", "bbb", "c"], ["dddd", "e", "f"]], ["H1", "H2", "H3"]) == (
        "H1    H2   H3\na     bbb  c\ndddd  e    f"
    )


def test_trailing_blanks_are_trimmed_and_rows_may_be_short():
    assert format_table([["long value", ""], ["x"]]) == "long value\nx"


def test_line_breaks_and_tabs_inside_cells_are_escaped():
    assert format_table([["a\nb", "c\td", "e\\f"]]) == "a\\nb  c\\td  e\\\\f"


def test_an_empty_table_is_empty():
    assert format_table([]) == ""
