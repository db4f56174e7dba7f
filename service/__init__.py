"""The Croupier service: gRPC server, event stores, auth, errors, logging and the CLI."""
