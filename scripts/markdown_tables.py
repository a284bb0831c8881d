"""Reading the Markdown tables that the validation scripts keep in docs/ (their --check modes)."""


def documented_table(markdown_path, command):
    """The tables after the line that is `command` (followed by spaces or a comment): the first,
    and each that follows it after one blank line (kept as an empty line between them)."""
    with open(markdown_path) as f:
        text = f.read().splitlines()
    starts = [i for i, line in enumerate(text)
              if line == command or line.startswith(command + " ") or line.startswith(command + "\t")]
    if not starts:
        return None
    lines = []
    rest = text[starts[0] + 1:]
    for i, line in enumerate(rest):
        if line.startswith("|"):
            lines.append(line)
        elif lines and line == "" and i + 1 < len(rest) and rest[i + 1].startswith("|"):
            lines.append("")
        elif lines:
            break
    return lines
