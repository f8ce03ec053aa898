"""The book wing: what a chapter needs to show things. It may use every other wing;
nothing in tfx imports it.

    notebook         a chapter's first cell (profile, device, style, seed) and glue
    plot             figures stamped with their profile and device
    explorer         Explorer and Panel: controls whose every state is embedded in the HTML
    widgets          the chapters' explorers
    sweep_explorers  every seed of one cell of a recorded sweep
    toy              the small models of chapter 1
    claims           the registry behind the claims appendix
    claims_page      the claims appendix itself (python -m tfx.book.claims_page)
"""
