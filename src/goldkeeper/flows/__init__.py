"""Prefect flows and tasks of the goldkeeper lifecycle (shipped as ``goldkeeper.flows``).

Each task calls exactly one core or io function; flows only sequence tasks. The flows
themselves arrive with the Prefect lifecycle issue.
"""
