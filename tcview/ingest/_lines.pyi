# The C line matcher (_lines.c): LINE's matches in buf[lo:hi], as `tracefile.FoundLine`s.
def lines(
    buf: bytes, lo: int, hi: int, /
) -> list[
    tuple[
        int, int, bytes | None, bytes | None, bytes | None, bytes | None, bytes | None, bytes | None
    ]
]: ...
