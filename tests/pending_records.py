"""The book-profile sweeps still being recorded, with why: the one list the tests that read
records consult (tests/runs/test_recorded_sweeps.py, tests/test_claims.py). Each test checks
that a listed sweep really is short, so an entry cannot outlive the work: take it off when
the records land."""

# experiment -> why its cells do not all have ≥ 5 seeds yet
SEEDS = {
}
# experiment -> why its grid does not yet bracket ≥ 90 % of its groups' best rates
BRACKET = {
}
# experiment -> why a sweep the evidence registry reads has no book records yet (its runs so far,
# if any, are committed in results/in-progress/: results/README.md)
UNRECORDED = {
}
