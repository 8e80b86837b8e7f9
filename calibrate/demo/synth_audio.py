"""Makes the demo's synthetic response audio: `python -m calibrate.demo.synth_audio`.

The demo's C3 responses are hand-written text; C3 ships a `.wav` beside each `.txt`. Without a
text-to-speech engine at hand, each response becomes hummed tones: one tone per word (per
character in Chinese), a falling pitch (rising at a question mark), silence at punctuation, so
the envelope in the app shows words and pauses where the text has them. 8 kHz, 8-bit mono
keeps all of them well under 1 MB. Not speech: the README here says so.
"""

from __future__ import annotations

import re
import wave
from pathlib import Path

import numpy as np

RATE = 8000
UNITS = re.compile(r"[\u4e00-\u9fff]|[A-Za-z'’āáǎàēéěèīíǐìōóǒòūúǔùǖǘǚǜ]+|…+|[,，.。!！?？:：;；—、]")
PAUSES = {"…": 0.45, "—": 0.25}


def _tone(seconds: float, start_hz: float, end_hz: float) -> np.ndarray:
    n = int(seconds * RATE)
    pitch = np.linspace(start_hz, end_hz, n)
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    shape = np.sin(np.pi * np.arange(n) / max(n - 1, 1)) ** 0.6  # rise and fall of a syllable
    return shape * (0.7 * np.sin(phase) + 0.3 * np.sin(2 * phase))


def synthesize(text: str) -> np.ndarray:
    """Tones for the words of `text`, silences for its punctuation, samples in [-1, 1]."""
    units = UNITS.findall(text)
    question = text.rstrip().endswith(("?", "？"))
    words = [u for u in units if u[0].isalpha()]
    pieces, spoken = [np.zeros(int(0.1 * RATE))], 0
    for unit in units:
        if not unit[0].isalpha():
            pieces.append(np.zeros(int(PAUSES.get(unit[0], 0.18) * RATE)))
            continue
        syllables = 1 if len(unit) == 1 else max(1, len(re.findall(r"[aeiouy]+", unit.lower())))
        start = 190 - 50 * spoken / max(len(words), 1)  # the voice falls over the sentence
        end = start + (60 if question and spoken == len(words) - 1 else -15)
        pieces.append(_tone(min(0.08 + 0.05 * syllables, 0.25), start, end) * (0.9 if spoken % 3 else 1.0))
        pieces.append(np.zeros(int(0.03 * RATE)))
        spoken += 1
    pieces.append(np.zeros(int(0.1 * RATE)))
    return np.concatenate(pieces)


def write_wav(path: Path, samples: np.ndarray) -> None:
    """8-bit unsigned mono PCM at RATE."""
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(RATE)
        wav.writeframes(np.clip(np.round(samples * 120 + 128), 0, 255).astype(np.uint8).tobytes())


def main() -> None:
    for text_file in sorted((Path(__file__).parent / "c3").glob("*/responses/**/*.txt")):
        write_wav(text_file.with_suffix(".wav"), synthesize(text_file.read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()
