"""The command ``python -m tfx.sweep experiments/NAME …``; the code is :mod:`tfx.runs.sweep`."""
if __name__ == "__main__":
    import sys

    from tfx.runs.sweep import main

    sys.exit(main())
