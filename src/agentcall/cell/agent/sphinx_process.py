"""One pocketsphinx decoder in its own process.

pocketsphinx's ``process_raw`` and ``end_utt`` hold Python's GIL while they work:
in the cell's process they stall the 20 ms media clock of every call (measured:
up to 2.5 s for a whole utterance on a busy 2-core machine). A decoder therefore
runs in a child process, ``python -m agentcall.cell.agent.sphinx_process`` (a plain
subprocess: nothing of the cell is imported or inherited), which also resamples
the line audio to the model's 16 kHz. The parent sends one request at a time over
the child's stdin and reads the answer from its stdout, from a worker thread (a
blocking read releases the GIL). The child exits when its stdin closes (the cell
ended or was killed).

Frames: request ``<op> <rate> <n>\n`` + n bytes of 16-bit PCM; answer
``ok <n>\n`` or ``error <n>\n`` + n bytes of UTF-8 text.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO, Any

from agentcall.cell.agent.providers_errors import ProviderError

MODEL_HZ = 16_000
PIECE_BYTES = MODEL_HZ * 2 * 20 // 1000  # 20 ms of model audio per process_raw call


def _text(hyp: Any) -> str:
    return str(hyp.hypstr).strip() if hyp is not None else ""


def _handle(decoder: Any, op: str, pcm: bytes, rate: int) -> str:  # noqa: C901 - a dispatch
    from agentcall.cell.audio.resample import resample

    audio = resample(pcm, rate, MODEL_HZ) if pcm else b""
    if op == "start":
        decoder.start_utt()
    elif op in ("feed", "finish"):
        for i in range(0, len(audio), PIECE_BYTES):
            decoder.process_raw(audio[i : i + PIECE_BYTES], False, False)
        if op == "finish":
            decoder.end_utt()
        return _text(decoder.hyp())
    elif op == "abort":
        decoder.end_utt()
    elif op == "batch":  # the whole utterance: cepstral mean over all of it
        decoder.start_utt()
        decoder.process_raw(audio, False, True)
        decoder.end_utt()
        return _text(decoder.hyp())
    else:
        raise ValueError(f"unknown decoder request {op!r}")
    return ""


def _write(out: IO[bytes], kind: str, text: str) -> None:
    data = text.encode()
    out.write(f"{kind} {len(data)}\n".encode() + data)
    out.flush()


def serve(inp: IO[bytes], out: IO[bytes], options: dict[str, Any]) -> None:
    """The child: load the model, then answer requests until stdin closes."""
    try:
        from pocketsphinx import Decoder  # type: ignore[import-untyped]

        decoder = Decoder(samprate=MODEL_HZ, loglevel="FATAL", **options)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        _write(out, "error", f"pocketsphinx could not load: {exc}")
        return
    _write(out, "ok", "ready")
    while header := inp.readline():
        op, rate, size = header.decode().split()
        pcm = inp.read(int(size))
        try:
            _write(out, "ok", _handle(decoder, op, pcm, int(rate)))
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            _write(out, "error", f"{op}: {exc}")


class DecoderProcess:
    """Blocking client of one decoder process; call it from a worker thread."""

    def __init__(self, **options: Any) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "agentcall.cell.agent.sphinx_process", json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._lock = threading.Lock()
        self._reply()  # "ready" once the model is loaded

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _reply(self) -> str:
        assert self._proc.stdout is not None
        header = self._proc.stdout.readline().split()
        if len(header) != 2:
            self.close()
            raise ProviderError("the pocketsphinx process ended")
        text = self._proc.stdout.read(int(header[1])).decode()
        if header[0] != b"ok":
            raise ProviderError(text)
        return text

    def call(self, op: str, pcm: bytes = b"", rate: int = MODEL_HZ) -> str:
        assert self._proc.stdin is not None
        with self._lock:
            try:
                self._proc.stdin.write(f"{op} {rate} {len(pcm)}\n".encode() + pcm)
                self._proc.stdin.flush()
            except (OSError, ValueError):
                self.close()
                raise ProviderError("the pocketsphinx process ended") from None
            return self._reply()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()


if __name__ == "__main__":
    _out, sys.stdout = sys.stdout.buffer, sys.stderr  # stdout carries the protocol only
    serve(sys.stdin.buffer, _out, json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
