"""The engine ↔ protobuf contract: each game's records as ``croupier.v1`` messages.

:mod:`croupier.contract.bindings` holds one :class:`~croupier.contract.bindings.GameBinding` per
game kind (its rule set, commands, events and views in both forms);
:mod:`~croupier.contract.convert` is the one field-by-field converter they use.
"""
