"""Generate the Python stubs (messages, gRPC stubs and their ``.pyi`` types, by mypy-protobuf;
the Connect service and client, by protoc-gen-connectrpc) from ``proto/``, and the include root
of the ``google/rpc`` protos our error details use (``gen/googleapis/``, copied from the pinned
googleapis-common-protos, for clients generated in other languages).

Run as a script by ``make`` before the package is installed (it imports nothing of Croupier), and
imported by the staleness test, which generates into a temporary folder and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
GEN_ROOT = ROOT / "gen"
#: The protos of the error details (google.rpc.Status, ErrorInfo, BadRequest, RetryInfo) and the
#: codes, as the pinned googleapis-common-protos ships them: an include root beside ``proto/`` for
#: buf or protoc in any language (README, "Clients in other languages").
GOOGLE_RPC_PROTOS = ("status.proto", "error_details.proto", "code.proto")
GOOGLEAPIS = "googleapis"


def proto_files() -> list[Path]:
    """Every ``.proto`` file of the contract, in a stable order."""
    return sorted((PROTO_ROOT / "croupier").rglob("*.proto"))


def generate(out: Path = GEN_ROOT) -> list[Path]:
    """Write the stubs under ``out`` and return the files written."""
    import grpc_tools
    from grpc_tools import protoc

    # mypy-protobuf's plugins sit beside the interpreter (its .pyi type the aio stubs too).
    bindir = Path(sys.executable).parent

    out.mkdir(parents=True, exist_ok=True)
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        f"--grpc_python_out={out}",
        # The Connect (and gRPC-Web) service and client of the HTTP listener, over the same
        # google.protobuf messages as the gRPC stubs.
        f"--plugin=protoc-gen-connectrpc={bindir / 'protoc-gen-connectrpc'}",
        f"--connectrpc_out={out}",
        "--connectrpc_opt=protobuf=google",
        *(str(p) for p in proto_files()),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    package = out / "croupier" / "v1"
    (package / "__init__.py").write_text('"""Generated from proto/croupier/v1 — do not edit."""\n')
    copy_google_rpc(out / GOOGLEAPIS)
    return sorted(p for p in package.iterdir() if p.is_file())


def copy_google_rpc(root: Path) -> list[Path]:
    """Copy the ``google/rpc`` protos of the installed googleapis-common-protos under ``root``
    (``root/google/rpc/*.proto``) and return them."""
    import google.rpc

    source = Path(next(iter(google.rpc.__path__)))
    target = root / "google" / "rpc"
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in GOOGLE_RPC_PROTOS:
        (target / name).write_bytes((source / name).read_bytes())
        written.append(target / name)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else GEN_ROOT
    for path in generate(target):
        print(f"generated {path.relative_to(target)}")
