"""The Textual annotation app. The domain modules never import this package."""

import os

# Textual paints at most MAX_FPS frames a second and reads it from the environment once, when
# first imported. At its default of 60 a keypress waits up to 17 ms for the next frame, half the
# 30 ms budget from key to next item; frames are painted only when something changed, so 120
# costs nothing at rest. An explicit TEXTUAL_FPS wins.
os.environ.setdefault("TEXTUAL_FPS", "120")

from calibrate.tui.app import CalibrateApp  # noqa: E402

__all__ = ["CalibrateApp"]
