"""bleu, chrf, rouge, f1 and wer give the scores of sacrebleu, rouge-score, jiwer and the SQuAD
v1.1 script on one shared corpus; a bad option or a missing library fails the config load."""
from __future__ import annotations

import json
import os
import re
import string
from collections import Counter
from pathlib import Path

import jiwer
import pytest
import sacrebleu
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics import BLEU, CHRF

from conftest import DATA, assert_golden, run_cli
from yamleval.builtins.scorers.reference import bleu, chrf, f1, rouge, wer

GOLDEN = DATA / "reference"

# (output, expected): expected is one reference or a list of them
CORPUS = [
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("", "a reference with words"),
    ("an output against nothing", ""),
    ("", ""),
    ("Le café était très bon, merci !", "Le café est très bon."),
    ("我喜欢吃苹果", "我喜欢苹果"),
    ("東京は日本の首都です。", ["東京は日本の首都である。", "日本の首都は東京です。"]),
    ("Hello, world! How's it going?", "hello world how is it going"),
    ("The quick brown fox jumps over the lazy dog",
     ["A quick brown fox leaps over the lazy dog", "The fast brown fox jumps over a lazy dog",
      "dogs"]),
    ("Paris", ["Paris", "paris, France"]),
    ("the runners were running quickly", "the runner runs quick"),
    ("Line one is here.\nLine two follows it.", "Line one is here.\nAnd line two."),
    ("Ünïcödé naïve résumé — “quoted”", ["unicode naive resume", "Ünïcödé naïve résumé"]),
    ("1, 2, 3 ... 4!!", "1 2 3 4"),
]


def _references(expected):
    return [expected] if isinstance(expected, str) else expected


@pytest.mark.parametrize("tokenize", ["13a", "none", "intl", "char", "zh"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_bleu_is_sacrebleus_sentence_bleu_over_100(tokenize, lowercase):
    for output, expected in CORPUS:
        want = sacrebleu.sentence_bleu(output, _references(expected), tokenize=tokenize, lowercase=lowercase)
        got = bleu(output, expected, tokenize=tokenize, lowercase=lowercase)
        assert got.score == pytest.approx(min(1.0, want.score / 100), abs=1e-6), (output, expected)
        assert 0.0 <= got.score <= 1.0


def test_bleu_reason_gives_the_figures_and_its_metadata_sums_to_corpus_bleu():
    got = bleu("the cat sat on the mat", ["the cat sat on a mat", "a cat"])
    assert got.reason == ("BLEU 53.7: n-gram precisions 83.3/60.0/50.0/33.3, brevity penalty 1.000, "
                          "output 6 tokens, reference 6 (best of 2 references)")
    single = [(output, expected) for output, expected in CORPUS if isinstance(expected, str)]
    stats = [bleu(output, expected).metadata for output, expected in single]
    summed = BLEU.compute_bleu([sum(s["counts"][n] for s in stats) for n in range(4)],
                               [sum(s["totals"][n] for s in stats) for n in range(4)],
                               sum(s["sys_len"] for s in stats), sum(s["ref_len"] for s in stats),
                               smooth_method="exp")
    corpus = sacrebleu.corpus_bleu([o for o, _ in single], [[e for _, e in single]])
    assert summed.score == pytest.approx(corpus.score, abs=1e-9)


@pytest.mark.parametrize("word_order", [0, 2])
@pytest.mark.parametrize("lowercase", [False, True])
def test_chrf_is_sacrebleus_chrf_over_100(word_order, lowercase):
    metric = CHRF(word_order=word_order, lowercase=lowercase)
    for output, expected in CORPUS:
        want = metric.sentence_score(output, _references(expected)).score / 100
        got = chrf(output, expected, word_order=word_order, lowercase=lowercase)
        assert got.score == pytest.approx(want, abs=1e-6), (output, expected)
    assert chrf("the cat", "the cat sat", word_order=2).reason.startswith("chrF2++ ")


def test_chrf_without_options_is_sentence_chrf():
    for output, expected in CORPUS:
        want = sacrebleu.sentence_chrf(output, _references(expected)).score / 100
        assert chrf(output, expected).score == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("stemmer", [False, True])
def test_rouge_is_rouge_scores_rouge_scorer(type, stemmer):
    scorer = RougeScorer([type], use_stemmer=stemmer)
    for output, expected in CORPUS:
        want = scorer.score_multi(_references(expected), output)[type]
        for measure, field in (("f", "fmeasure"), ("precision", "precision"), ("recall", "recall")):
            got = rouge(output, expected, type=type, measure=measure, stemmer=stemmer)
            assert got.score == pytest.approx(getattr(want, field), abs=1e-6), (output, expected, measure)


def test_rouge_defaults_to_rougeL_f_and_gives_precision_and_recall():
    got = rouge("the cat sat on the mat", "the cat sat")
    want = RougeScorer(["rougeL"]).score("the cat sat", "the cat sat on the mat")["rougeL"]
    assert got.score == pytest.approx(want.fmeasure, abs=1e-12)
    assert got.reason == "rougeL precision 0.500, recall 1.000, F 0.667"


# The SQuAD v1.1 evaluation script (evaluate-v1.1.py), its scoring functions as published.
def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    return max(metric_fn(prediction, ground_truth) for ground_truth in ground_truths)


def test_f1_is_the_squad_scripts():
    for output, expected in CORPUS:
        want = metric_max_over_ground_truths(f1_score, output, _references(expected))
        assert f1(output, expected).score == want, (output, expected)


@pytest.mark.parametrize("output, expected, score", [
    ("The Eiffel Tower", "eiffel tower", 1.0),  # article and case go
    ("an apple, a pear", "apple pear", 1.0),
    ("Denver Broncos", "Broncos", 2 / 3),
    ("theatre tickets", "the theatre", 2 / 3),  # "the" goes only as a whole word
    ("", "", 0.0),  # v1.1: nothing in common is 0, even for two empty answers
    ("yes yes yes", "yes", 0.5),  # tokens count with multiplicity
])
def test_f1_known_cases(output, expected, score):
    assert f1(output, expected).score == pytest.approx(score, abs=1e-12)


def test_f1_reason_counts_tokens():
    assert f1("The Denver Broncos!", ["Broncos", "Denver"]).reason == (
        "F1 0.667: 1 in common of 2 output tokens and 1 expected (best of 2 references)")


def test_wer_is_one_minus_jiwers_wer():
    for output, expected in CORPUS:
        want = min(jiwer.wer(reference, output) for reference in _references(expected))
        assert wer(output, expected).score == max(0.0, 1.0 - want), (output, expected)


def test_wer_reason_gives_the_wer_and_each_edit():
    got = wer("the cat sat down on mat", "the cat sat on the mat")
    assert got.reason == "WER 0.333: words: 0 substituted, 1 deleted, 1 inserted, 5 correct"
    many = wer("one two three four five", "one")
    assert (many.score, many.reason) == (0.0, "WER 4.000: words: 0 substituted, 0 deleted, 4 inserted, 1 correct")


@pytest.mark.parametrize("scorer, options, message", [
    (bleu, {"tokenize": "13b"}, "bleu: unknown tokenize '13b'"),
    (bleu, {"lowercase": "yes"}, "bleu: lowercase must be true or false, got 'yes'"),
    (bleu, {"tokenize": "ja-mecab"}, "bleu: the tokenizer 'ja-mecab' cannot be loaded: Japanese tokenization "
                                     "requires extra dependencies, but you do not have them installed. Please "
                                     "install them like so. pip install sacrebleu[ja]"),
    (chrf, {"word_order": -1}, "chrf: word_order must be a whole number of at least 0, got -1"),
    (rouge, {"measure": "F"}, "rouge: unknown measure 'F'"),
    (rouge, {"stemmer": 1}, "rouge: stemmer must be true or false, got 1"),
])
def test_a_bad_option_is_refused_when_the_config_loads(scorer, options, message):
    with pytest.raises(ValueError) as raised:
        scorer.validate_with(options)
    assert (str(raised.value), raised.value.key) == (message, next(iter(options)))


def _golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


BAD_TYPE = """\
experiments:
  - id: summaries
    dataset: {items: [{input: a cat, expected: the cat}]}
    runner: echo
    scorers:
      - {uses: rouge, with: {type: rouge9}}
"""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_an_unknown_rouge_type_is_a_located_config_error(command, tmp_path):
    (tmp_path / "evals.yaml").write_text(BAD_TYPE, encoding="utf-8")
    done = run_cli(command, "evals.yaml", cwd=tmp_path, NO_COLOR="1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    _golden("bad_rouge_type.expected.txt", done.stderr)


def test_a_missing_library_fails_the_load_saying_what_to_install(tmp_path):
    """sacrebleu shadowed by a module that cannot be imported, as when it is not installed."""
    (tmp_path / "missing").mkdir()
    (tmp_path / "missing" / "sacrebleu.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'sacrebleu'\", name='sacrebleu')\n", encoding="utf-8")
    (tmp_path / "evals.yaml").write_text(BAD_TYPE.replace("{uses: rouge, with: {type: rouge9}}", "bleu"),
                                         encoding="utf-8")
    done = run_cli("validate", "evals.yaml", cwd=tmp_path, NO_COLOR="1",
                   PYTHONPATH=os.pathsep.join([str(tmp_path / "missing"), str(DATA), os.environ.get("PYTHONPATH", "")]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    _golden("missing_sacrebleu.expected.txt", done.stderr)


def test_a_run_scores_and_gates_with_bleu_and_wer(tmp_path: Path):
    (tmp_path / "evals.yaml").write_text("""\
experiments:
  - id: transcripts
    dataset:
      items:
        - {id: same, input: the cat sat on the mat, expected: the cat sat on the mat}
        - {id: close, input: the cat sat on a mat, expected: [the cat sat on the mat, a cat sat on a mat]}
        - {id: far, input: dogs bark, expected: the cat sat on the mat}
    runner: echo
    scorers:
      - {uses: bleu, with: {lowercase: true}}
      - {uses: wer, threshold: 0.8}
""", encoding="utf-8")
    done = run_cli("run", "evals.yaml", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # 'far' fails wer's threshold
    items = {item["id"]: item for item in
             json.loads((tmp_path / "out" / "results.json").read_text())["experiments"][0]["items"]}
    assert {name: item["status"] for name, item in items.items()} == {
        "same": "passed", "close": "passed", "far": "failed"}
    for name, item in items.items():
        output, expected = item["output"], item["expected"]
        want_bleu = sacrebleu.sentence_bleu(output, _references(expected), lowercase=True).score / 100
        assert item["scores"]["bleu"]["score"] == pytest.approx(min(1.0, want_bleu), abs=1e-6)
        want_wer = min(jiwer.wer(reference, output) for reference in _references(expected))
        assert item["scores"]["wer"]["score"] == max(0.0, 1.0 - want_wer)
    assert items["far"]["scores"]["wer"]["reason"] == (
        "WER 1.000: words: 2 substituted, 4 deleted, 0 inserted, 0 correct")
    assert items["far"]["scores"]["wer"]["passed"] is False


@pytest.mark.parametrize("tokenize, pairs", [
    ("13a", "corpus"), ("intl", "corpus"),
    ("13a", "no 4-gram in common"),  # smoothed, as corpus_bleu is: not 0
])
def test_a_run_gives_corpus_bleu_as_sacrebleus_corpus_bleu(tmp_path: Path, tokenize, pairs):
    single = [(output, expected) for output, expected in CORPUS if isinstance(expected, str)] if pairs == "corpus" \
        else [("I'd go with B", "B"), ("the cat sat on the mat", "the cat is on the mat"), ("Paris", "paris")]
    items = ", ".join(json.dumps({"id": f"i{n}", "input": output, "expected": expected}, ensure_ascii=False)
                      for n, (output, expected) in enumerate(single))
    (tmp_path / "evals.yaml").write_text(f"""\
experiments:
  - id: translations
    dataset: {{items: [{items}]}}
    runner: echo
    scorers:
      - {{uses: bleu, with: {{tokenize: {tokenize}}}}}
      - exact_match
""", encoding="utf-8")
    done = run_cli("run", "evals.yaml", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    want = sacrebleu.corpus_bleu([o for o, _ in single], [[e for _, e in single]], tokenize=tokenize).score / 100
    assert want > 0
    summary = json.loads((tmp_path / "out" / "results.json").read_text())["experiments"][0]["summary"]
    assert summary["scorers"]["bleu"]["corpus"] == pytest.approx(want, abs=1e-6)
    assert summary["scorers"]["exact_match"]["corpus"] is None
    assert f"corpus {want:.3f}" in done.stdout
    assert f"bleu | {summary['scorers']['bleu']['mean']:.3f} (corpus {want:.3f})" in \
        (tmp_path / "out" / "summary.md").read_text()
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'name="scorer.bleu.corpus"' in junit
