"""The `calibrate` command's entry point, and `python -m calibrate`'s: the CLI's modules take a
few tenths of a second to load, and a Ctrl-C meanwhile ends the command as a Ctrl-C in it does
("Aborted!", exit 1), not with a traceback of the import it cut short."""

import sys


def run() -> None:
    try:
        from calibrate.cli import main
    except KeyboardInterrupt:  # nothing has begun: no database is open yet
        sys.stderr.write("Aborted!\n")
        raise SystemExit(1) from None
    main()


if __name__ == "__main__":
    run()
