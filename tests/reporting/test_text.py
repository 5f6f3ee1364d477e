"""Cleaning and capping text for strict formats."""
import pytest

from yamleval.reporting import text


def test_clean_text_keeps_only_xml_characters_and_marks_cuts():
    assert text.clean_text("a\x1b[1;31mb\x1b[0m\x00c\td\re\nf\U0001F600") == "ab" + "c\td\re\nf\U0001F600"
    cut = text.clean_text("ü" * 100, limit=11)
    assert cut == "ü" * 5 + text.TRUNCATED
    assert text.clean_text("short", limit=5) == "short"
    assert text.one_line("  two\n lines\x07 ") == "two lines"
    assert text.one_line("x" * 500).endswith(text.TRUNCATED) and len(text.one_line("x" * 500)) == 200


def test_a_score_just_below_its_threshold_never_reads_as_the_threshold():
    from yamleval.reporting.text import item_message
    from yamleval.records.types import Item, ItemResult, ScoreResult

    def message(score: float, threshold: float) -> str:
        return item_message(ItemResult(Item("i", 0, "q"), "failed", "a",
                                       scores={"lev": ScoreResult("lev", "success", score, False, threshold)}))

    assert message(0.0996, 0.1) == "lev 0.0996 < 0.1"
    assert message(0.79999, 0.8) == "lev 0.79999 < 0.8"
    assert message(0.5, 0.8) == "lev 0.500 < 0.8"


@pytest.mark.parametrize("cost, text", [(0, "$0"), (4e-7, "< $0.000001"), (6e-7, "$0.000001"), (0.5, "$0.50"),
                                        (0.00372, "$0.00372"), (0.12345678, "$0.123457"), (0.9999999, "$1.00"),
                                        (12.5, "$12.50"), (1234.567, "$1,234.57")])
def test_a_cost_reads_the_same_in_every_report_and_never_with_an_exponent(cost, text):
    from yamleval.records.figures import dollars

    assert dollars(cost) == text
