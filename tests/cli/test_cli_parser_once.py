"""``nenjim.cli.main`` parses every command of a process with one parser, built once: what
one command's options gave, the next command does not see."""

from __future__ import annotations

import logging

from nenjim.cli.logs import chosen_level
from nenjim.cli.run import _parser


def test_one_parser_serves_every_command_and_keeps_nothing_of_one() -> None:
    assert _parser() is _parser()
    first = _parser().parse_args(
        ["-v", "serve", "--key", "K", "--cors", "https://a.example", "--cors", "*"]
    )
    assert first.cors == ["https://a.example", "*"]
    assert chosen_level(first) == logging.INFO
    again = _parser().parse_args(["serve", "--key", "K"])
    assert again.cors == []
    assert chosen_level(again, default=logging.WARNING) == logging.WARNING
    third = _parser().parse_args(["serve", "--key", "K", "--cors", "https://b.example"])
    assert third.cors == ["https://b.example"]
