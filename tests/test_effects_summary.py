"""browserskill/base/effects.py, the pure half of `result.effects`: what counts as a change,
what the input itself implies, and the one-line text."""

from __future__ import annotations

from browserskill.base.effects import bound_ms, effects_line, implied_value, summarize


def test_nothing_seen_is_none_and_says_so() -> None:
    effects = summarize("click", [{"counts": {}, "states": []}], watched_ms=120)
    assert effects == {"none": True, "settled": True, "watched_ms": 120}
    assert effects_line(effects) == "nothing on the page changed"


def test_what_the_input_implies_is_not_an_effect() -> None:
    target = {"ref": "e3", "target": True, "changed": {"value": ["ab", "abcd"]}}
    typed = summarize("type", [{"states": [target]}], typed="cd", target_ref="e3")
    assert typed["none"] is True
    filled = summarize("fill", [{"states": [target]}], typed="abcd", target_ref="e3")
    assert filled["none"] is True
    masked = summarize("fill", [{"states": [target]}], typed="xyz", target_ref="e3",
                       ref_names={"e3": ("textbox", "Phone")})
    assert masked["dom"]["states"] == [{"ref": "e3", "role": "textbox", "name": "Phone",
                                        "changed": {"value": ["ab", "abcd"]}}]
    # The target scrolled into view before a click is the click's own doing
    assert summarize("click", [{"scrolled": {"dx": 0, "dy": 300}}])["none"] is True
    assert summarize("press", [{"scrolled": {"dx": 0, "dy": 300}}])["scrolled"] == {
        "dx": 0, "dy": 300}
    assert summarize("scroll", [{"scrolled": {"dx": 0, "dy": 300}}])["none"] is True
    assert implied_value("type", "b", "a", "ab") and not implied_value("type", "b", "a", "ax")


def test_unwatched_parts_never_claim_none() -> None:
    effects = summarize("click", [], unobserved=["a dialog blocks the page"])
    assert effects["none"] is False
    assert "not watched: a dialog blocks the page" in effects_line(effects)


def test_rerendered_text_and_names_are_not_listed_twice() -> None:
    frame = {"counts": {"added": 3, "removed": 1},
             "appeared": [["menuitem", "Edit", "e9"], ["menuitem", "Delete", "e10"],
                          ["generic", "", None]],
             "text_appeared": ["EditDelete", "Saved", "Total 3"],
             "text_gone": ["Total 3"]}
    effects = summarize("click", [frame], requests=[
        {"method": "POST", "url": "http://x.test/api/save?a=1", "status": 201},
        {"method": "GET", "url": "http://x.test/poll", "state": "pending"}])
    dom = effects["dom"]
    assert dom["appeared"] == [{"role": "menuitem", "name": "Edit", "ref": "e9"},
                               {"role": "menuitem", "name": "Delete", "ref": "e10"}]
    assert dom["text_appeared"] == ["Saved"] and "text_gone" not in dom
    assert effects_line(effects) == ('"Saved" appeared; appeared: menuitem "Edit" e9, '
                                     'menuitem "Delete" e10; POST /api/save?a=1 201; '
                                     'GET /poll pending')


def test_bound_and_unsettled() -> None:
    assert bound_ms(100) == 1000 and bound_ms(400) == 1600
    effects = summarize("click", [{"counts": {"text": 2}}], settled=False, watched_ms=1004)
    assert effects_line(effects) == "the DOM changed (2 texts); still changing after 1004 ms"
    one = summarize("click", [{"counts": {"text": 1, "attributes": 1}}], settled=True,
                    watched_ms=100, brief=True)
    # Nothing named changed: what shows may come later (a menu's delay), and it says so.
    assert effects_line(one) == ("the DOM changed (1 text, 1 attribute); nothing new shown "
                                 "at once (--settle MS waits for a later change)")
    # ... unless the caller chose how long to watch (`--settle`): it was not at once.
    chosen = summarize("click", [{"counts": {"text": 1, "attributes": 1}}], settled=True,
                       watched_ms=500, brief=False)
    assert effects_line(chosen) == "the DOM changed (1 text, 1 attribute)"


def test_a_cut_list_says_it_was_cut_for_gone_as_for_appeared() -> None:
    """Before, six options gone read as three: the line listed 3 with no "…"."""
    options = [{"role": "option", "name": state} for state in
               ("Alabama", "Alaska", "Arizona", "Texas", "Utah", "Wyoming")]
    line = effects_line({"none": False, "settled": True,
                         "dom": {"gone": options, "appeared": options}})
    assert line == ('appeared: option "Alabama", option "Alaska", option "Arizona" …; '
                    'gone: option "Alabama", option "Alaska", option "Arizona" …')
    brief = effects_line({"none": True, "brief": True, "settled": True})
    assert brief == "nothing on the page changed at once (--settle MS waits for a later change)"


def test_moved_elements_say_where_they_are_now() -> None:
    frame = {"counts": {"moved": 4, "attributes": 2},
             "moved": [["row", "Ada 36", "e4", [1, 4]], ["row", "Bob 41", "e5", [2, 4]],
                       ["row", "Cy 50", "e6", [3, 4]], ["row", "Di 29", "e7", [4, 4]]]}
    effects = summarize("click", [frame])
    assert effects["dom"]["moved"] == 4
    assert effects["dom"]["moved_to"][0] == {"role": "row", "name": "Ada 36", "ref": "e4",
                                             "position": [1, 4]}
    assert effects_line(effects) == ('moved: row "Ada 36" e4 (now 1 of 4), row "Bob 41" e5 '
                                     '(now 2 of 4), row "Cy 50" e6 (now 3 of 4) …')
