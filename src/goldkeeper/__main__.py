"""``python -m goldkeeper`` runs the command line."""

from goldkeeper.launch import entry

entry()
