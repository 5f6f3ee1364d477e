"""A scorer whose verdict the item itself gives (``metadata.judge``): a judge with known verdicts,
for measuring agreement with people against a reference."""


def given(output, item):
    return bool(item.metadata["judge"])


def judged(output, item):
    """As ``given``, in a judge's shape: a model named, a reason given."""
    from yamleval import Score

    passed = bool(item.metadata["judge"])
    return Score(score=1.0 if passed else 0.0, passed=passed, reason="the judge's reasoning",
                 metadata={"model": "fixture", "verdict": "pass" if passed else "fail"})
