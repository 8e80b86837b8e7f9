"""Lets `python -m calibrate` run the same CLI as the `calibrate` command."""

from calibrate.cli import main

main()
