"""The monitor's screens: the main monitor and its modal dialogs."""
