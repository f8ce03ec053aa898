"""The command ``python -m tfx.bench …``; the code is :mod:`tfx.runs.bench`."""
if __name__ == "__main__":
    from tfx.runs.bench import main

    main()
