"""Reference-metric scorers: bleu, chrf, rouge, f1, wer.

Each compares the text of the output with the expected text, or with each of a list of
expected texts (references). ``bleu``, ``chrf`` and ``rouge`` are the scores of sacrebleu and
Google's rouge-score, and ``wer`` is jiwer's word error rate, computed by those libraries
themselves; ``f1`` is the SQuAD v1.1 token F1, written here. Every score is in [0, 1]
(sacrebleu's 0-100 scores divided by 100).

The libraries are the ``metrics`` extra (``pip install 'yamleval[metrics]'``) and are imported
only when a config uses one of these scorers: a missing one, or an option they do not know,
fails the config load at the scorer's ``with:``.
"""
from __future__ import annotations

import difflib
import functools
import importlib
import re
import string
from collections import Counter
from typing import Any, Callable, Literal, get_args

from yamleval.plugins.registry import OptionError
from yamleval.builtins.scorers.text import as_texts, to_text
from yamleval.records.install import install_hint
from yamleval.records.types import Score

INSTALL_HINT = install_hint("metrics")
RougeType = Literal["rouge1", "rouge2", "rougeL", "rougeLsum"]
Measure = Literal["f", "precision", "recall"]
MEASURES = {"f": "fmeasure", "precision": "precision", "recall": "recall"}  # the field of rouge-score's Score


def _library(scorer: str, module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name != module.partition(".")[0]:  # installed, but something it imports is not
            raise OptionError(f"scorer '{scorer}': importing {package} failed: {exc}", hint=INSTALL_HINT) from None
        raise OptionError(f"scorer '{scorer}' needs the package {package}, which is not installed",
                          hint=INSTALL_HINT) from None


def _one_of(scorer: str, key: str, value: Any, choices: tuple[str, ...]) -> None:
    if value in choices:
        return
    close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise OptionError(f"{scorer}: unknown {key} {value!r}", key, f"{hint}one of: {', '.join(choices)}")


def _flag(scorer: str, key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise OptionError(f"{scorer}: {key} must be true or false, got {value!r}", key)


def _whole(scorer: str, key: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise OptionError(f"{scorer}: {key} must be a whole number of at least {low}, got {value!r}", key)


def _checked(check: Callable[..., None]) -> Callable[[dict], None]:
    """A ``validate_with`` for a scorer: ``check`` gets the ``with:`` values as keyword arguments."""
    return lambda arguments: check(**arguments)


def _from_percent(value: float) -> float:
    """A 0-100 library score in [0, 1] (sacrebleu's 100 comes out as 100.00000000000004)."""
    return min(1.0, max(0.0, value / 100.0))


def _best_of(references: list[str]) -> str:
    return f" (best of {len(references)} references)" if len(references) > 1 else ""


# ---- bleu --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def _bleu_metric(tokenize: str, lowercase: bool) -> Any:
    metrics = _library("bleu", "sacrebleu.metrics", "sacrebleu")
    return metrics.BLEU(tokenize=tokenize, lowercase=lowercase, effective_order=True)


def bleu(output: Any, expected: Any, tokenize: str = "13a", lowercase: bool = False) -> Score:
    """Sentence BLEU of the output against the expected text or texts, as sacrebleu's
    ``sentence_bleu`` computes it, divided by 100.

    sacrebleu's defaults: the ``13a`` tokenizer (``tokenize:`` takes any of sacrebleu's: ``none``,
    ``zh``, ``intl``, ``char``, ``ja-mecab``...; those that need a package of their own say so
    when the config loads, and the ``flores`` ones download their model then), exponential
    smoothing and effective n-gram order; ``lowercase: true`` ignores case. The reason gives BLEU on sacrebleu's 0-100 scale,
    the 1- to 4-gram precisions, the brevity penalty and both lengths in tokens. The metadata
    holds the n-gram ``counts`` and ``totals`` and the ``sys_len`` and ``ref_len``: summed over
    items they give corpus BLEU, which the run's summary shows as the scorer's ``corpus`` figure.
    """
    references = as_texts("bleu", expected)
    result = _bleu_metric(tokenize, lowercase).sentence_score(to_text(output), references)
    precisions = "/".join(f"{p:.1f}" for p in result.precisions)
    return Score(score=_from_percent(result.score),
                 reason=f"BLEU {result.score:.1f}: n-gram precisions {precisions}, brevity penalty "
                        f"{result.bp:.3f}, output {result.sys_len} tokens, reference {result.ref_len}"
                        f"{_best_of(references)}",
                 metadata={"counts": list(result.counts), "totals": list(result.totals),
                           "sys_len": result.sys_len, "ref_len": result.ref_len,
                           "corpus_stats": [result.sys_len, result.ref_len, *result.counts, *result.totals]})


def _corpus_bleu(stats: list, **options: Any) -> float:
    """Corpus BLEU (sacrebleu's ``corpus_bleu``, divided by 100) from the items' summed
    ``corpus_stats``: output and reference lengths, then the n-gram matches and totals; the
    options (tokenizer, case) decided those counts already."""
    metrics = _library("bleu", "sacrebleu.metrics", "sacrebleu")
    order = (len(stats) - 2) // 2
    return _from_percent(metrics.BLEU.compute_bleu(correct=stats[2:2 + order], total=stats[2 + order:],
                                                   sys_len=stats[0], ref_len=stats[1], smooth_method="exp").score)


def _check_bleu(tokenize: str = "13a", lowercase: bool = False) -> None:
    metrics = _library("bleu", "sacrebleu.metrics", "sacrebleu")
    _one_of("bleu", "tokenize", tokenize, tuple(metrics.BLEU.TOKENIZERS))
    _flag("bleu", "lowercase", lowercase)
    try:
        _bleu_metric(tokenize, lowercase)
    except Exception as exc:  # a tokenizer whose own package is missing (ja-mecab, spm...)
        said = " ".join(str(exc).split()) or type(exc).__name__  # sacrebleu's advice spans lines
        raise OptionError(f"bleu: the tokenizer '{tokenize}' cannot be loaded: {said}", "tokenize") from None


bleu.validate_with = _checked(_check_bleu)
bleu.corpus_score = _corpus_bleu


# ---- chrf --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def _chrf_metric(word_order: int, lowercase: bool) -> Any:
    metrics = _library("chrf", "sacrebleu.metrics", "sacrebleu")
    return metrics.CHRF(word_order=word_order, lowercase=lowercase)


def chrf(output: Any, expected: Any, word_order: int = 0, lowercase: bool = False) -> Score:
    """chrF (character n-gram F-score) of the output against the expected text or texts, as
    sacrebleu's ``sentence_chrf`` computes it, divided by 100.

    Character n-grams up to 6, recall weighted twice as much as precision (beta 2), spaces
    ignored; ``word_order: 2`` adds word unigrams and bigrams (chrF++); ``lowercase: true``
    ignores case. With several references the best one counts. The reason gives the score on
    sacrebleu's 0-100 scale under its name (``chrF2``, ``chrF2++``).
    """
    references = as_texts("chrf", expected)
    result = _chrf_metric(word_order, lowercase).sentence_score(to_text(output), references)
    return Score(score=_from_percent(result.score), reason=f"{result.name} {result.score:.1f}{_best_of(references)}")


def _check_chrf(word_order: int = 0, lowercase: bool = False) -> None:
    _library("chrf", "sacrebleu.metrics", "sacrebleu")
    _whole("chrf", "word_order", word_order, 0)
    _flag("chrf", "lowercase", lowercase)


chrf.validate_with = _checked(_check_chrf)


# ---- rouge -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def _rouge_metric(type: str, stemmer: bool) -> Any:
    module = _library("rouge", "rouge_score.rouge_scorer", "rouge-score")
    return module.RougeScorer([type], use_stemmer=stemmer)


def rouge(output: Any, expected: Any, type: RougeType = "rougeL", measure: Measure = "f",
          stemmer: bool = False) -> Score:
    """ROUGE of the output against the expected text or texts, as Google's rouge-score
    ``RougeScorer`` computes it.

    ``type``: ``rouge1`` or ``rouge2`` (unigram or bigram overlap), ``rougeL`` (longest common
    subsequence, the default) or ``rougeLsum`` (the same over sentences, one per line);
    ``measure``: ``f`` (default), ``precision`` or ``recall``; ``stemmer: true`` applies the
    Porter stemmer. rouge-score's tokenizer lowercases and keeps only ASCII letters and digits,
    so text in other scripts has no tokens (score 0). With several references, the one with the
    best F-measure counts (``score_multi``). The reason gives precision, recall and F-measure.
    """
    references = as_texts("rouge", expected)
    found = _rouge_metric(type, stemmer).score_multi(references, to_text(output))[type]
    return Score(score=float(getattr(found, MEASURES[measure])),
                 reason=f"{type} precision {found.precision:.3f}, recall {found.recall:.3f}, "
                        f"F {found.fmeasure:.3f}{_best_of(references)}")


def _check_rouge(type: str = "rougeL", measure: str = "f", stemmer: bool = False) -> None:
    _one_of("rouge", "type", type, get_args(RougeType))
    _one_of("rouge", "measure", measure, get_args(Measure))
    _flag("rouge", "stemmer", stemmer)
    _library("rouge", "rouge_score.rouge_scorer", "rouge-score")


rouge.validate_with = _checked(_check_rouge)


# ---- f1 ----------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def squad_tokens(text: str) -> list[str]:
    """The words of ``text`` after the SQuAD v1.1 script's ``normalize_answer``: lowercased, ASCII
    punctuation removed, then the articles a, an and the, split on whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def f1(output: Any, expected: Any) -> Score:
    """SQuAD token F1 of the output against the expected answer, or the best over a list of
    answers, as the SQuAD v1.1 evaluation script computes it.

    Both texts are normalised (``squad_tokens``); F1 is the harmonic mean of the precision and
    recall of the tokens in common (counted with multiplicity); no token in common, including
    two empty answers, gives 0. The reason gives the tokens in common and both token counts.
    """
    answers = as_texts("f1", expected)
    predicted = squad_tokens(to_text(output))
    best = (-1.0, 0, 0)
    for answer in answers:
        truth = squad_tokens(answer)
        same = sum((Counter(predicted) & Counter(truth)).values())
        score = 0.0
        if same:  # the script's own arithmetic, so that scores are equal to the last bit
            precision, recall = 1.0 * same / len(predicted), 1.0 * same / len(truth)
            score = (2 * precision * recall) / (precision + recall)
        if score > best[0]:
            best = (score, same, len(truth))
    score, same, truth_count = best
    return Score(score=score, reason=f"F1 {score:.3f}: {same} in common of {len(predicted)} output tokens and "
                                     f"{truth_count} expected{_best_of(answers)}")


# ---- wer ---------------------------------------------------------------------------------

def wer(output: Any, expected: Any) -> Score:
    """``1 - WER`` (at least 0), the word error rate of the output against the expected text as
    jiwer computes it, so that higher is better; with several references the closest counts.

    WER is (substitutions + deletions + insertions) / words of the reference, after jiwer's
    default transform (spaces collapsed and stripped, split on whitespace); it exceeds 1 when
    the output has many extra words, which scores 0. The reason gives the WER itself and the
    counts of each edit.
    """
    jiwer = _library("wer", "jiwer", "jiwer")
    references = as_texts("wer", expected)
    hypothesis = to_text(output)
    found = min((jiwer.process_words(reference, hypothesis) for reference in references), key=lambda o: o.wer)
    edits = f"words: {found.substitutions} substituted, {found.deletions} deleted, {found.insertions} inserted"
    return Score(score=max(0.0, 1.0 - found.wer),
                 reason=f"WER {found.wer:.3f}: {edits}, {found.hits} correct{_best_of(references)}")


def _check_wer() -> None:
    _library("wer", "jiwer", "jiwer")


wer.validate_with = _checked(_check_wer)
