"""FramePacer (tools/pacing.py): screencast frames, sent when the page changes, become a
constant-rate video whose slot k shows the newest frame at or before k/fps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from browserskill.tools.pacing import FramePacer


def film(stamps: list[float], end: float, fps: int = 25) -> list[int]:
    """The frame index each written slot shows."""
    pacer, slots = FramePacer(fps), []
    for i, stamp in enumerate(stamps):
        slots += [i - 1] * pacer.push(stamp)
    return slots + [len(stamps) - 1] * pacer.finish(end)


def test_a_still_page_repeats_its_frame_and_a_burst_is_thinned() -> None:
    # frame 0 at 0 s, then nothing for a second: 25 slots of frame 0, then frame 1
    assert film([0.0, 1.0], 1.2) == [0] * 25 + [1] * 5
    # four frames within one slot: only the newest is kept
    assert film([0.0, 0.005, 0.01, 0.015], 0.2) == [3] * 5
    assert film([], 5.0) == []
    assert film([3.0], 3.0) == [0]  # the last frame shows at least once


@settings(deadline=None)
@given(st.lists(st.floats(0, 30), min_size=1, max_size=60), st.floats(0, 5))
def test_each_slot_shows_the_newest_frame_by_then(gaps: list[float], tail: float) -> None:
    stamps = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    stamps = [s - stamps[0] for s in stamps]
    end = stamps[-1] + tail
    slots = film(stamps, end)
    # the film lasts until the end, and shows the last frame at least once
    assert len(slots) == max(round(stamps[-1] * 25) + 1, round(end * 25))
    for k, shown in enumerate(slots):
        newest = max(i for i, s in enumerate(stamps) if round(s * 25) <= k) \
            if any(round(s * 25) <= k for s in stamps) else 0
        assert shown == newest, (k, shown, newest)


def test_catching_up_on_a_still_page_changes_no_slot() -> None:
    # Repeats written while the page is still (catch_up) make the same film as all at once.
    pacer, slots = FramePacer(25), []
    slots += [-1] * pacer.push(0.0)
    slots += [0] * pacer.catch_up(2.0)  # 2 s still: frame 0 fills its 50 slots now
    assert slots == [0] * 50
    slots += [0] * pacer.catch_up(1.0)  # never backwards
    slots += [0] * pacer.push(3.0)
    slots += [1] * pacer.finish(3.2)
    assert slots == film([0.0, 3.0], 3.2) == [0] * 75 + [1] * 5
    assert FramePacer(25).catch_up(9.0) == 0  # no frame yet: nothing to repeat
