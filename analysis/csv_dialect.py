"""The field separator of a CSV file, read from its header line: a comma, or the semicolon or tab that
spreadsheets write where the comma is the decimal mark, so a file from any tool reads the same."""

#: The separators a header may use, in the order a tie is broken.
SEPARATORS = (",", ";", "\t")


def separator(header: str) -> str:
    """The separator the header line uses most (outside double quotes); a comma when it uses none."""
    counts = dict.fromkeys(SEPARATORS, 0)
    quoted = False
    for char in header:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in counts:
            counts[char] += 1
    best = max(SEPARATORS, key=lambda sep: counts[sep])  # max keeps the first of equal counts
    return best if counts[best] else ","


def first_line(text: str) -> str:
    """The text up to its first line break (the header of a CSV file), without a byte-order mark."""
    return text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
