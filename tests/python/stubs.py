"""The Python stubs of the public API, generated from `proto/` by grpcio-tools
for the end-to-end tests that call it (here and in `tests/nostr/`)."""

from __future__ import annotations

import importlib.resources
import os
import tempfile

from grpc_tools import protoc

FILES = ["chess/common/v1/common.proto", "chess/gateway/v1/gateway.proto"]
PACKAGES = ["chess", "chess/common", "chess/common/v1", "chess/gateway", "chess/gateway/v1"]


def generate(proto: str) -> str:
    """Generates the stubs of the public API from the protos under `proto`
    into a new directory, and returns it: its top-level package is `chess`
    (`chess.gateway.v1.gateway_pb2` and the rest)."""
    out = tempfile.mkdtemp(prefix="chess-stubs-")
    well_known = str(importlib.resources.files("grpc_tools") / "_proto")
    status = protoc.main(
        ["protoc", f"-I{proto}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}"]
        + FILES
    )
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")
    for package in PACKAGES:
        open(os.path.join(out, package, "__init__.py"), "a").close()
    return out
