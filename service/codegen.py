"""Generate the Python stubs (messages, gRPC stubs and their ``.pyi`` types, by mypy-protobuf)
from ``proto/``.

Run as a script by ``make`` before the package is installed (it imports nothing of Croupier), and
imported by the staleness test, which generates into a temporary folder and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
GEN_ROOT = ROOT / "gen"


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
        *(str(p) for p in proto_files()),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    package = out / "croupier" / "v1"
    (package / "__init__.py").write_text('"""Generated from proto/croupier/v1 — do not edit."""\n')
    return sorted(p for p in package.iterdir() if p.is_file())


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else GEN_ROOT
    for path in generate(target):
        print(f"generated {path.relative_to(target)}")
