"""A command line parsed and checked by faircl's LightningCLI parser, nothing built or run: the trainer settings a run
will use (whether it needs a process of its own), the trials' options of ``faircl sweep`` checked before any starts,
and a sweep's own options read by the same parser as its trials' ``faircl fit`` options."""

from __future__ import annotations

from typing import Any, Callable

from jsonargparse import ArgumentParser, Namespace

from faircl.runs.given_options import GivenOptions
from faircl.runs.lightning_cli import FairCLI, cli_options


class _Parsed(Exception):
    """Raised by :class:`_ParseOnly` once the command line is parsed, carrying the CLI."""

    def __init__(self, cli: FairCLI) -> None:
        super().__init__("parsed")
        self.cli = cli



def option_keys(add_arguments: Callable[[Any], None]) -> frozenset[str]:
    """The top-level keys of the options that ``add_arguments(parser)`` adds (``slurm`` for ``--slurm.*``)."""
    probe = ArgumentParser()
    add_arguments(probe)
    return frozenset(k.split(".")[0] for k in probe.get_defaults().keys())


class _ParseOnly(FairCLI):
    """A :class:`FairCLI` that stops once the command line is parsed and checked: nothing is built or run.
    ``own_arguments(parser)`` adds a command's own options beside the run's."""

    def __init__(self, *args: Any, own_arguments: Callable[[Any], None] | None = None, **kwargs: Any) -> None:
        self.own_arguments = own_arguments
        if own_arguments is not None:
            self.own_keys = option_keys(own_arguments)
        super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser) -> None:
        super().add_arguments_to_parser(parser)
        if self.own_arguments is not None:
            self.own_arguments(parser)

    def parse_arguments(self, parser, args) -> None:
        super().parse_arguments(parser, args)
        raise _Parsed(self)


def parse_command(args: list[str]) -> tuple[Namespace, GivenOptions]:
    """``faircl <args>`` (``fit ...``) parsed and checked by jsonargparse, nothing built: the command's config (with the
    defaults) and what its config files and options give."""
    try:
        _ParseOnly(args=list(args), **cli_options())
    except _Parsed as done:
        config = done.cli.config
        sub = config.get("subcommand")
        return (config[sub] if sub else config), done.cli.given
    raise AssertionError("unreachable: _ParseOnly always stops after the parse")


def parse_beside_run(args: list[str], own_arguments: Callable[[Any], None], **parser_kwargs: Any
                     ) -> tuple[Namespace, GivenOptions]:
    """The command line of a command that takes a ``faircl fit``'s options beside its own (``faircl sweep``: its
    trials'), parsed and checked by one jsonargparse parser, nothing built: the config with both (the defaults
    included), and what the run is given (the command's own options left out). ``own_arguments(parser)`` adds the
    command's options, ``parser_kwargs`` go to the parser (``prog``, ``description``, ``epilog`` of its ``--help``). A
    command line that gives the run nothing (``faircl sweep --out DIR --resume``) is not checked as a run."""
    try:
        _ParseOnly(args=list(args), run=False, own_arguments=own_arguments, parser_kwargs=parser_kwargs,
                   **cli_options())
    except _Parsed as done:
        return done.cli.config, done.cli.given
    raise AssertionError("unreachable: _ParseOnly always stops after the parse")
