#!/usr/bin/env python3
"""Writes a text/html page of exactly SIZE bytes to stdout, the same bytes for the same
arguments: paragraphs, lists, links and a table made of words picked (with a fixed seed)
from the text files given, the way a documentation or news page mixes markup and prose.
Used by bench/gzip.sh, so that both servers compress something like a real page: random
bytes would not compress, and one repeated sentence would compress far better than HTML
does.

    make_html.py SIZE SEED TEXT_FILE...
"""

import random
import re
import sys


def main():
    size = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    words = []
    for path in sys.argv[3:]:
        with open(path, encoding="utf-8", errors="replace") as text:
            words += re.findall(r"[A-Za-z][A-Za-z'-]{1,15}", text.read())
    if len(words) < 100:
        sys.exit("make_html.py: fewer than 100 words in the text files given")

    def sentence(low, high):
        chosen = [rng.choice(words) for _ in range(rng.randint(low, high))]
        chosen[0] = chosen[0].capitalize()
        return " ".join(chosen) + rng.choice([".", ".", ".", "?", "!"])

    def slug():
        return "-".join(rng.choice(words).lower() for _ in range(rng.randint(1, 3)))

    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f"<title>{sentence(3, 6)}</title>\n",
        "<link rel=\"stylesheet\" href=\"/static/site.css\">\n</head>\n<body>\n",
        "<nav class=\"top\"><ul>\n",
    ]
    for _ in range(12):
        parts.append(f"  <li><a href=\"/{slug()}/\">{rng.choice(words)}</a></li>\n")
    parts.append("</ul></nav>\n<main>\n")
    body = []
    section = 0
    while sum(map(len, body)) < size:
        section += 1
        body.append(f"<section id=\"s{section}\">\n<h2>{sentence(2, 7)}</h2>\n")
        for _ in range(rng.randint(2, 5)):
            text = " ".join(sentence(6, 24) for _ in range(rng.randint(2, 6)))
            if rng.random() < 0.5:
                text += f" <a href=\"/{slug()}/{slug()}.html\">{sentence(1, 4)}</a>"
            body.append(f"<p class=\"text\">{text}</p>\n")
        if rng.random() < 0.4:
            body.append("<ul class=\"list\">\n")
            for _ in range(rng.randint(3, 8)):
                body.append(f"  <li><span class=\"item\">{sentence(3, 10)}</span></li>\n")
            body.append("</ul>\n")
        if rng.random() < 0.25:
            body.append("<table class=\"data\">\n<tr><th>Name</th><th>Value</th><th>Note</th></tr>\n")
            for _ in range(rng.randint(3, 8)):
                body.append(f"<tr><td>{rng.choice(words)}</td><td>{rng.randint(0, 99999)}</td>"
                            f"<td>{sentence(2, 6)}</td></tr>\n")
            body.append("</table>\n")
        body.append("</section>\n")
    tail = "</main>\n<footer><p>End of page.</p></footer>\n</body>\n</html>\n"
    page = ("".join(parts) + "".join(body)).encode()
    # The body is longer than SIZE: cut it (maybe inside a tag) and end with the closing tags.
    page = page[: size - len(tail)] + tail.encode()
    sys.stdout.buffer.write(page)


if __name__ == "__main__":
    main()
