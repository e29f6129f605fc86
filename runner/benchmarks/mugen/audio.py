"""Audio clips as the model receives them: base64 data plus a format name, from any form a row holds.

A row's audio value may be a file path (local rows: relative to the data dir, next to the rows), an
undecoded hub value `{"bytes": ..., "path": ...}`, raw bytes, or a decoded `{"array": [...],
"sampling_rate": N}` (encoded here as 16-bit PCM WAV with the stdlib `wave` module, so no audio library
is needed). The format is read from the bytes themselves, not from a file name.
"""

from __future__ import annotations

import base64
import hashlib
import io
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MAGIC = ((b"RIFF", "wav"), (b"fLaC", "flac"), (b"OggS", "ogg"), (b"ID3", "mp3"))
_EXTENSIONS = {".wav": "wav", ".mp3": "mp3", ".flac": "flac", ".ogg": "ogg", ".m4a": "m4a", ".webm": "webm"}


@dataclass(frozen=True)
class Clip:
    """One audio clip ready to send."""

    data: bytes
    format: str

    @property
    def base64(self) -> str:
        """The clip as the `input_audio.data` field carries it."""
        return base64.b64encode(self.data).decode("ascii")

    def describe(self, label: str) -> dict[str, Any]:
        """What the samples file keeps instead of the audio itself (size and digest, never the bytes)."""
        return {"type": "input_audio", "clip": label, "format": self.format, "bytes": len(self.data),
                "sha256": hashlib.sha256(self.data).hexdigest()[:16]}


def audio_format(data: bytes, name: str | None = None) -> str:
    """wav, mp3, flac, ogg, ... from the leading bytes (or, failing that, the file extension)."""
    for magic, fmt in _MAGIC:
        if data.startswith(magic):
            return fmt
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0:  # an MPEG frame header
        return "mp3"
    if name and Path(name).suffix.lower() in _EXTENSIONS:
        return _EXTENSIONS[Path(name).suffix.lower()]
    raise ValueError(f"cannot tell the audio format of {name or 'a clip'} ({len(data)} bytes); "
                     "use WAV or MP3 files")


def wav_bytes(samples: Sequence[float] | Any, sampling_rate: int) -> bytes:
    """16-bit mono PCM WAV of a decoded clip. Floats are taken as [-1, 1]; integers as 16-bit PCM.

    A 2-D array (channels x frames or frames x channels) is mixed down to mono.
    """
    values = samples.tolist() if hasattr(samples, "tolist") else list(samples)
    if values and isinstance(values[0], list):
        rows = values if len(values) <= len(values[0]) else [list(c) for c in zip(*values, strict=True)]
        values = [sum(frame) / len(frame) for frame in zip(*rows, strict=True)]
    pcm = bytearray()
    for v in values:
        x = int(round(v * 32767)) if isinstance(v, float) else int(v)
        pcm += max(-32768, min(32767, x)).to_bytes(2, "little", signed=True)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(int(sampling_rate))
        out.writeframes(bytes(pcm))
    return buffer.getvalue()


def load_clip(value: Any, base_dir: Path | None, column: str) -> Clip:
    """The clip a row's audio value holds; ValueError (naming the column) when it cannot be read.

    `base_dir` is the folder relative paths are resolved in; a path there may not leave it (a row must
    not make the runner send an arbitrary local file to a provider). Hub values (base_dir None) are
    paths inside the `datasets` cache and are read as they are.
    """
    if isinstance(value, (bytes, bytearray)):
        return Clip(bytes(value), audio_format(bytes(value)))
    if isinstance(value, str):
        return _from_path(value, base_dir, column)
    if isinstance(value, Mapping):
        if value.get("array") is not None:
            rate = value.get("sampling_rate")
            if not rate:
                raise ValueError(f"{column}: a decoded array needs its sampling_rate")
            return Clip(wav_bytes(value["array"], int(rate)), "wav")
        if value.get("bytes"):
            data = bytes(value["bytes"])
            return Clip(data, audio_format(data, value.get("path")))
        if value.get("path"):
            return _from_path(str(value["path"]), base_dir, column)
    raise ValueError(f"{column}: expected an audio file path, bytes, or a dict with 'bytes', 'path' or "
                     f"'array', got {type(value).__name__}")


def _from_path(path: str, base_dir: Path | None, column: str) -> Clip:
    file = Path(path).expanduser()
    if base_dir is not None:
        root = base_dir.resolve()
        file = (root / file).resolve()
        if not file.is_relative_to(root):
            raise ValueError(f"{column}: audio path '{path}' leaves the data dir {root}; "
                             "keep audio files next to the rows")
    if not file.is_file():
        raise ValueError(f"{column}: audio file '{path}' not found (looked at {file})")
    data = file.read_bytes()
    return Clip(data, audio_format(data, file.name))
