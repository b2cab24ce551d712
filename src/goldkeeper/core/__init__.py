"""The pure core: values in, values out.

Nothing in this package touches files, the network, the clock, the environment or unseeded
randomness, and it imports only the standard library, pydantic, numpy and scipy. That is what
lets every flow task, CLI command and test call the same logic directly.
"""
