"""formatting.py's state and time words: the one mapping every page (and hpcdet.js) uses."""

from __future__ import annotations

from hpcdet.master.web.formatting import EMPTY, or_dash, state_badge, state_word, time_tag
from hpcdet.states import State


def test_every_state_has_a_word_a_user_of_determined_reads() -> None:
    words = {s.value: state_word(s.value) for s in State}
    assert words["STOPPING_COMPLETED"] == "Stopping"
    assert words["ERROR"] == "Errored" and words["ACTIVE"] == "Active"
    assert all("_" not in word and word[0].isupper() for word in words.values())


def test_the_queue_and_the_trial_page_say_the_same_for_a_running_job() -> None:
    assert state_word("SCHEDULED") == state_word("RUNNING") == "Running"


def test_an_unknown_state_reads_in_sentence_case_and_none_is_a_dash() -> None:
    assert state_word("NEW_THING") == "New thing"
    assert state_word("") == EMPTY


def test_a_badge_keeps_the_exact_state_on_hover_and_escapes_it() -> None:
    assert str(state_badge("STOPPING_KILLED")) == (
        '<span class="state state-STOPPING_KILLED" title="STOPPING_KILLED">Killing</span>')
    assert "<script>" not in str(state_badge("<script>"))
    assert str(state_badge(None)) == EMPTY


def test_a_time_tag_is_utc_text_with_the_iso_moment_on_hover() -> None:
    tag = str(time_tag("2026-01-02T04:04:05+01:00"))
    assert tag == ('<time datetime="2026-01-02T03:04:05Z" title="2026-01-02T03:04:05Z">'
                   "2026-01-02 03:04:05 UTC</time>")
    assert str(time_tag(None)) == EMPTY and str(time_tag(None, "not yet")) == "not yet"


def test_empty_values_are_a_dash() -> None:
    assert or_dash(None) == or_dash("") == EMPTY
    assert or_dash(0) == 0 and or_dash("x") == "x"
