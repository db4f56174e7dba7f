"""The application core: the service's use cases, with no transport in it.

:class:`~croupier.app.core.Croupier` takes an event store, a token signer, a clock and a seed
source, and offers every use case as an async method; transports (``croupier.service``'s gRPC
adapter) parse a request, call it and format the answer.
"""
