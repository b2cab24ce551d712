"""The ``goldkeeper`` command: one typer application, its commands grouped by concept.

    app       the application, shared options and printers, ``main``
    labels    validate, convert, id, example
    scoring   score, eval, compare, power, audit, agreement, calibrate
    drift     drift, snapshot, queue apply
    judge     judge (an LLM judge grades the queue first)
    suites    suite init|set|show, history
    flows     emit-reindex, alert, serve, demo (the only ones that import prefect, when run)
    help      goldkeeper help [COMMAND], registered last

Exit codes and the one way failures become them (``guarded``) are in ``goldkeeper.errors``.
"""

# Each module registers its commands on import; `goldkeeper --help` lists them in this order.
from goldkeeper.cli import drift, flows, judge, labels, scoring, suites  # noqa: F401
from goldkeeper.cli.app import add_exit_codes, app, help_, main

app.command("help")(help_)
add_exit_codes(app)

__all__ = ["app", "main"]
