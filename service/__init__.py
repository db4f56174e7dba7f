"""The Croupier service: gRPC server, event stores, auth, errors, logging and the CLI."""

import os

# gRPC's C core prints lines of its own, not JSON, from INFO up: a TLS handshake that a plaintext
# client or a port scanner failed is one per attempt. Only its errors, unless the operator asks
# for more (docs/operations.md, "Logs"). It reads the setting when grpc is first imported, which
# every module here does: so before any of them.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
