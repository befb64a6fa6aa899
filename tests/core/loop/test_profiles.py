"""core/loop/profiles.py: the prompt files, the one depth section that applies, hand-tuning and its reset."""

from __future__ import annotations

import pytest

from deepagent_magics.core.loop.profiles import (
    Profile,
    UnknownProfile,
    available_profiles,
    instructions_hash,
    load_profile,
    packaged_text,
    reset_profile,
    set_profile_text,
)

TEXT = ("Intro.\n<!-- depth: root -->\nYou talk to the user.\n<!-- depth: sub -->\nYou may delegate.\n"
        "<!-- depth: deepest -->\nDo it yourself.\n<!-- end depth -->\nOutro.\n")


def test_only_the_section_for_the_agents_depth_is_kept():
    profile = Profile("p", TEXT)
    assert profile.instructions(0, 2) == "Intro.\nYou talk to the user.\n\nOutro."
    assert "You may delegate." in profile.instructions(1, 2) and "user" not in profile.instructions(1, 2)
    assert "Do it yourself." in profile.instructions(2, 2)
    assert Profile("p", "No sections.").instructions(3) == "No sections."


def test_the_packaged_profiles_and_names_that_are_never_paths():
    assert {"default", "coder", "researcher", "reviewer"} <= set(available_profiles())
    assert "<!-- depth:" in packaged_text("default")
    for name in ("../prompts/default", "../etc/passwd", "a/b", "", 3):  # the first names a real file
        with pytest.raises(UnknownProfile):
            load_profile(name)
    with pytest.raises(UnknownProfile, match="unknown profile 'nope'"):
        load_profile("nope")


def test_hand_tuning_replaces_the_text_until_reset():
    try:
        set_profile_text("coder", "Hand-tuned.")
        assert load_profile("coder").text == "Hand-tuned." and load_profile("coder").is_modified
    finally:
        reset_profile("coder")
    assert not load_profile("coder").is_modified
    with pytest.raises(UnknownProfile):
        set_profile_text("nope", "x")
    assert instructions_hash("a") == instructions_hash("a") != instructions_hash("b") and len(instructions_hash("a")) == 12
