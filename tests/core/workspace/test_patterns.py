"""core/workspace/patterns.py: the agent's patterns in linear time (RE2), with Python's Unicode classes and glob rules
(the hostile timing cases: tests/adversarial/test_grep_linear.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.workspace.patterns import MAX_PATTERN, PatternError, compile_regex, glob_regex


def test_a_pattern_that_backtracks_forever_in_re_matches_at_once():
    assert compile_regex(r"(a+)+$").search("a" * 100_000 + "b") is None


def test_word_and_digit_classes_are_unicode_as_in_python():
    assert compile_regex(r"^\w+$").search("naïve_東京") is not None
    assert compile_regex(r"^\d+$").search("٣٤") is not None  # Arabic-Indic digits are \d in Python
    assert compile_regex(r"^\W+$").search("é") is None
    assert compile_regex(r"[\w-]+").search("a-b").group() == "a-b"
    assert compile_regex(r"[]a]").search("]") is not None


@pytest.mark.parametrize("pattern, says", [
    (r"(a)\1", "no backreferences"), (r"a(?=b)", "no lookarounds"), (r"(?>a)", "no atomic groups"),
    ("(", "invalid regular expression"), ("x" * (MAX_PATTERN + 1), "keep it under"),
])
def test_what_re2_cannot_take_is_an_error_the_agent_reads(pattern, says):
    with pytest.raises(PatternError, match=says) as caught:
        compile_regex(pattern)
    assert str(caught.value).startswith("Error: ")
    with pytest.raises(PatternError, match="must be a string"):
        compile_regex(3)


@pytest.mark.parametrize("pattern, path, matches", [
    ("*.csv", "a.csv", True), ("*.csv", "d/a.csv", False), ("**/*.csv", "d/e/a.csv", True),
    ("**/*.csv", "a.csv", True), ("d/**", "d/e/f", True), ("?.txt", "ab.txt", False), ("[ab].txt", "b.txt", True),
    ("[!ab].txt", "c.txt", True), ("[!ab].txt", "a.txt", False), ("a+b.txt", "a+b.txt", True), ("[x.txt", "[x.txt", True),
])
def test_globs_match_whole_paths_as_pathlib_does(pattern, path, matches):
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


def test_a_file_filter_crosses_folders_as_fnmatch_does():
    assert glob_regex("*.py", cross_folders=True).fullmatch("pkg/mod.py")
    assert not glob_regex("*.py").fullmatch("pkg/mod.py")
