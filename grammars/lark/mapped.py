"""Text built from pieces of grammar files that remembers where each piece came from.

The translation llguidance reads is such a text: an error the engine reports at an offset of it is
moved back to the file and offset the user wrote (`locate`).
"""

from __future__ import annotations

import bisect

from grammars.lark.syntax import File

__all__ = ["MappedText"]


class MappedText:
    """Pieces of text, each marked with its origin: a copied piece maps offset by offset to the
    file it was copied from, a written one to the spot it stands for (None: to no file)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        # (offset here, file, offset there, copied) for each piece, in order
        self.marks: list[tuple[int, File | None, int, bool]] = []

    def copy(self, file: File, start: int, end: int) -> None:
        if end > start:
            self.marks.append((self.size, file, start, True))
            self.parts.append(file.text[start:end])
            self.size += end - start

    def put(self, text: str, file: File | None, at: int) -> None:
        if text:
            self.marks.append((self.size, file, at, False))
            self.parts.append(text)
            self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts)

    def locate(self, offset: int) -> tuple[File | None, int]:
        """The file and offset that `offset` of this text came from ((None, 0): from no file)."""
        if not self.marks:
            return None, 0
        low = max(bisect.bisect_right(self.marks, offset, key=lambda m: m[0]) - 1, 0)
        if self.marks[low][1] is None and low and self.marks[low][0] == offset:
            low -= 1  # the end of the piece before (where the engine found a line cut short)
        begin, file, at, linear = self.marks[low]
        return file, at + (offset - begin if linear else 0)
