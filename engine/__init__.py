"""Croupier's rules engines: pure, deterministic, no I/O, no clock, no global randomness.

Randomness enters only through :class:`croupier.engine.shuffle.Seeds`; time only as an argument.
"""

ENGINE_VERSION = "1"
