"""A scorer whose verdict the item itself gives (``metadata.judge``): a judge with known verdicts,
for measuring agreement with people against a reference."""


def given(output, item):
    return bool(item.metadata["judge"])
