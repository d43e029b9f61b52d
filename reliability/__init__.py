"""Reliability tooling that runs against real clusters: direct-RPC access (``raw``), the protocol fuzzer
(``python -m reliability.fuzz``, ``make fuzz``) and the nemesis suite (``python -m reliability.chaos``,
``make chaos``). See ``docs/reliability.md``."""
