"""``python -m goldkeeper`` runs the command line."""

from goldkeeper.cli import main

main()
