"""Replays: export, verification and rendering of recorded games (the replay issue builds these).

Today a replay is the ``GetReplay`` answer: the whole log with its hash chain, the rule set, the
commitment, the client seeds and, once the game is over, the revealed server seed.
"""
