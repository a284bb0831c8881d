"""Reading the Markdown tables that the validation scripts keep in docs/ (their --check modes)."""


def documented_table(markdown_path, command):
    """The tables after the line that is `command` (followed by nothing but spaces or a comment, so that
    a command is not taken for a longer one that begins with it): the first,
    and each that follows it after one blank line (kept as an empty line between them)."""
    with open(markdown_path) as f:
        text = f.read().splitlines()
    def is_command(line):
        rest = line[len(command):]
        return line.startswith(command) and (rest.strip() == "" or (rest[:1] in " \t" and rest.lstrip().startswith("#")))

    starts = [i for i, line in enumerate(text) if is_command(line)]
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
