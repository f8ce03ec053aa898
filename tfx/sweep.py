"""The command ``python -m tfx.sweep experiments/NAME …``; the code is :mod:`tfx.runs.sweep`
(with ``--carry-forward``, :mod:`tfx.runs.carry`)."""
if __name__ == "__main__":
    import sys

    if "--carry-forward" in sys.argv[1:]:
        from tfx.runs.carry import main
    else:
        from tfx.runs.sweep import main

    sys.exit(main())
