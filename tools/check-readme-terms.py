#!/usr/bin/env python3
"""Checks that README.md defines its jargon before using it (run by ctest: readme_terms).

A reader meets the README top to bottom. Every term below is one a newcomer cannot know (a
statistic, a stage of the diagnosis, a word we coined); each must be defined in the glossary
("## Words used everywhere", as a bold term at the start of a bullet or bold inside one), and no
line above its definition may use it. Code blocks count: a sample of console output that says
"Stage I" teaches the term as much as prose does.

Usage: tools/check-readme-terms.py [README.md]
Exit status: 0 every term defined before use; 1 otherwise, one line per problem (file:line).
"""
import re
import sys

GLOSSARY = "## Words used everywhere"
# Jargon and the spellings that count as a use of it (regexes, case-insensitive, whole words).
JARGON = {
    "Stage I": r"stage i(?![iv])",
    "Stage II": r"stage ii",
    "fusion": r"fusion|fused",
    "residual model": r"residual models?",
    "z-score": r"z-scores?",
    "empirical null": r"empirical null",
    "impact": r"impact(?:_ns)?",
    "absorbed": r"absorbed(?:_ns)?",
    "impact floor": r"impact floor",
    "insufficient evidence": r"insufficient[ _]evidence",
    "straggler": r"stragglers?",
    "two tiers": r"two[- ]tiers?",
    "detail window": r"detail windows?",
}


def glossary_span(lines):
    start = next((i for i, l in enumerate(lines) if l.strip() == GLOSSARY), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return start, end


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "README.md"
    lines = open(path, encoding="utf-8").read().splitlines()
    span = glossary_span(lines)
    if span is None:
        print("%s: no '%s' section" % (path, GLOSSARY))
        return 1
    problems = []
    for term, pattern in JARGON.items():
        word = re.compile(r"(?<![\w-])(?:%s)(?![\w])" % pattern, re.I)
        bold = re.compile(r"\*\*(?:%s)\*\*" % pattern, re.I)
        defined = next((i for i in range(*span) if bold.search(lines[i])), None)
        if defined is None:
            problems.append("%s:%d: '%s' is not defined in the glossary (bold, in '%s')"
                            % (path, span[0] + 1, term, GLOSSARY))
            continue
        early = next((i for i in range(defined) if word.search(lines[i])), None)
        if early is not None:
            problems.append("%s:%d: '%s' is used before its definition at line %d: %s"
                            % (path, early + 1, term, defined + 1, lines[early].strip()[:100]))
    for p in problems:
        print(p)
    if not problems:
        print("%s: %d terms, each defined before its first use" % (path, len(JARGON)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
