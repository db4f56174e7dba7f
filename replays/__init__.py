"""Replays: the replay file (``format``), its verification (``verify``) and, for third parties,
``standalone_verify.py`` (standard library only). The file format is documented in
``docs/replay-format.md``.
"""
