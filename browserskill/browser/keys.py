"""Key definitions for browser-native keyboard input (a US layout), and chord parsing.

`press` names keys the way the DOM's KeyboardEvent.key does (`Enter`, `ArrowDown`, `a`)
and joins modifiers with `+` (`Control+A`, `Shift+Tab`, `Meta+Enter`, `Control++`);
`type` looks each character up here and sends it as the key that makes it.
Stdlib only, pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class KeyDef:
    key: str  # KeyboardEvent.key
    code: str  # KeyboardEvent.code
    key_code: int  # windowsVirtualKeyCode
    text: str = ""  # what the key inserts; empty for keys that insert nothing
    location: int = 0  # 1: left modifier, 3: numpad

    @property
    def label(self) -> str:
        """How the key is named in recorded input steps."""
        return "Space" if self.key == " " else self.key


# Modifier name -> CDP modifier bit (Input.dispatchKeyEvent `modifiers`).
MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
MODIFIERS = {
    "Alt": KeyDef("Alt", "AltLeft", 18, location=1),
    "Control": KeyDef("Control", "ControlLeft", 17, location=1),
    "Meta": KeyDef("Meta", "MetaLeft", 91, location=1),
    "Shift": KeyDef("Shift", "ShiftLeft", 16, location=1),
}

_NAMED = [
    KeyDef("Enter", "Enter", 13, "\r"),
    KeyDef("Tab", "Tab", 9),
    KeyDef("Backspace", "Backspace", 8),
    KeyDef("Delete", "Delete", 46),
    KeyDef("Escape", "Escape", 27),
    KeyDef(" ", "Space", 32, " "),
    KeyDef("ArrowUp", "ArrowUp", 38),
    KeyDef("ArrowDown", "ArrowDown", 40),
    KeyDef("ArrowLeft", "ArrowLeft", 37),
    KeyDef("ArrowRight", "ArrowRight", 39),
    KeyDef("Home", "Home", 36),
    KeyDef("End", "End", 35),
    KeyDef("PageUp", "PageUp", 33),
    KeyDef("PageDown", "PageDown", 34),
    KeyDef("Insert", "Insert", 45),
    KeyDef("CapsLock", "CapsLock", 20),
    KeyDef("ContextMenu", "ContextMenu", 93),
    KeyDef("Pause", "Pause", 19),
    KeyDef("PrintScreen", "PrintScreen", 44),
    *(KeyDef(f"F{n}", f"F{n}", 111 + n) for n in range(1, 13)),
    *MODIFIERS.values(),
]

# Printable keys: (code, keyCode, unshifted, shifted).
_PRINTABLE = [
    *((f"Key{c.upper()}", ord(c.upper()), c, c.upper()) for c in "abcdefghijklmnopqrstuvwxyz"),
    *((f"Digit{d}", 48 + d, str(d), ")!@#$%^&*("[d]) for d in range(10)),
    ("Backquote", 192, "`", "~"), ("Minus", 189, "-", "_"), ("Equal", 187, "=", "+"),
    ("BracketLeft", 219, "[", "{"), ("BracketRight", 221, "]", "}"),
    ("Backslash", 220, "\\", "|"), ("Semicolon", 186, ";", ":"), ("Quote", 222, "'", '"'),
    ("Comma", 188, ",", "<"), ("Period", 190, ".", ">"), ("Slash", 191, "/", "?"),
]

# A character -> the key that types it (shifted characters carry their own key and text).
CHARS: dict[str, KeyDef] = {}
SHIFTED: dict[str, KeyDef] = {}  # unshifted key -> what Shift makes of it
for _code, _kc, _plain, _shift in _PRINTABLE:
    CHARS[_plain] = KeyDef(_plain, _code, _kc, _plain)
    CHARS[_shift] = KeyDef(_shift, _code, _kc, _shift)
    SHIFTED[_plain] = CHARS[_shift]
CHARS[" "] = _NAMED[5]
CHARS["\n"] = CHARS["\r"] = _NAMED[0]
CHARS["\t"] = _NAMED[1]

# Multi-character names, looked up case-insensitively, with common aliases.
NAMED: dict[str, KeyDef] = {k.label.lower(): k for k in _NAMED}
_ALIASES = {
    "esc": "escape", "return": "enter", "del": "delete", "space": "space", "spacebar": "space",
    "up": "arrowup", "down": "arrowdown", "left": "arrowleft", "right": "arrowright",
    "ctrl": "control", "controlormeta": "control", "cmd": "meta", "command": "meta",
    "super": "meta", "win": "meta", "os": "meta", "option": "alt", "opt": "alt",
    "pgup": "pageup", "pgdn": "pagedown", "ins": "insert", "plus": "+",
}

EXAMPLES = ("Enter", "Tab", "Escape", "Backspace", "ArrowDown", "PageDown", "F5", "a",
            "Control+A", "Shift+Tab", "Meta+Enter", "Control+Shift+ArrowLeft")


class BadKeyError(ValueError):
    """A key name or chord that can't be pressed; the message says why."""


def lookup(name: str) -> KeyDef:
    if len(name) == 1:
        found = CHARS.get(name)
        if found is None:
            raise BadKeyError(f"{name!r} is not a key on the keyboard layout (use `type` for text)")
        return found
    lowered = name.lower()
    lowered = _ALIASES.get(lowered, lowered)
    if len(lowered) == 1:
        return CHARS[lowered]
    found = NAMED.get(lowered)
    if found is None:
        import difflib

        near = difflib.get_close_matches(lowered, [*NAMED, *_ALIASES], n=1, cutoff=0.75)
        meant_key = NAMED.get(_ALIASES.get(near[0], near[0])) if near else None
        meant = meant_key.label if meant_key else None
        raise BadKeyError(f"unknown key {name!r}" + (f" (did you mean {meant}?)" if meant
                                                     else ""))
    return found


def modifier_name(k: KeyDef) -> str | None:
    return k.key if k.key in MODIFIER_BITS else None


@dataclass(frozen=True)
class Chord:
    modifiers: tuple[KeyDef, ...]  # pressed in order, released in reverse
    key: KeyDef  # as it is sent with those modifiers held (Shift applied, text dropped)


def parse_chord(combo: str) -> Chord:
    """`Control+Shift+A` -> Chord; raises BadKeyError with a reason."""
    if not combo:
        raise BadKeyError("empty key")
    parts = combo.split("+")
    tokens: list[str] = []
    i = 0
    while i < len(parts):
        if parts[i] == "" and i + 1 < len(parts) and parts[i + 1] == "":
            tokens.append("+")  # `+` itself, as in `+` or `Control++`
            i += 2
            continue
        if parts[i] == "" or parts[i].strip() != parts[i]:
            raise BadKeyError(f"can't read {combo!r}: empty or padded key name")
        tokens.append(parts[i])
        i += 1
    defs = [lookup(t) for t in tokens]
    *mods, last = defs
    for t, m in zip(tokens, mods, strict=False):
        if modifier_name(m) is None:
            raise BadKeyError(f"{t!r} is not a modifier: only Alt, Control, Meta and Shift "
                            "can come before the last key")
    names = [m.key for m in mods]
    if len(set(names)) != len(names):
        raise BadKeyError(f"a modifier appears twice in {combo!r}")
    key = last
    if names and "Shift" not in names and len(key.key) == 1 and key.key.isupper():
        key = CHARS[key.key.lower()]  # Control+A is the A key: KeyboardEvent.key "a"
    if "Shift" in names and key.text and key.key in SHIFTED:
        key = SHIFTED[key.key]
    if any(n != "Shift" for n in names) and modifier_name(key) is None:
        key = replace(key, text="")  # Control+A selects; it types nothing
    return Chord(tuple(mods), key)


def modifier_bits(names: list[str] | tuple[str, ...]) -> int:
    bits = 0
    for n in names:
        bits |= MODIFIER_BITS.get(n, 0)
    return bits
