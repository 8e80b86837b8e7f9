"""The Textual annotation app. The domain modules never import this package."""

from calibrate.tui.app import CalibrateApp

__all__ = ["CalibrateApp"]
