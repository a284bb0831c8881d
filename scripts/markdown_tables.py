"""Reading the Markdown tables that the validation scripts keep in docs/ (their --check modes)."""


def documented_table(markdown_path, command):
    """The first table after the line that is `command` (followed by spaces or a comment)."""
    with open(markdown_path) as f:
        text = f.read().splitlines()
    starts = [i for i, line in enumerate(text)
              if line == command or line.startswith(command + " ") or line.startswith(command + "\t")]
    if not starts:
        return None
    lines = []
    for line in text[starts[0] + 1:]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break
    return lines
